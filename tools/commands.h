/* The graft subcommands: each takes the arguments after its name and returns an exit status. */
#ifndef GRAFT_TOOLS_COMMANDS_H
#define GRAFT_TOOLS_COMMANDS_H

int cmd_fmt(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_compare(int argc, char **argv);

#endif
