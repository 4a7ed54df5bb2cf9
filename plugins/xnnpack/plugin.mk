# libgraft_xnnpack.so links Debian's libxnnpack-dev (0.0~git20220216) and its thread pool.
PLUGIN_LDLIBS_xnnpack = -lXNNPACK -lpthreadpool -lm
