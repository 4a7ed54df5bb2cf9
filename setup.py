"""Builds graft's Python extension (python/graft/_graft.c) over libgraft.so.

The build step runs make for build/libgraft.so (and the explorer page the extension compiles
in), then links the extension against it with an $ORIGIN rpath and puts libgraft.so next to it
in the package. GRAFT_MAKE_JOBS (default 2) sets make's -j; GRAFT_WERROR=1 makes warnings
errors (make pytest sets it)."""
import os
import shutil
import subprocess

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(ROOT, "build")


def pkg_libdir(pkg):
    try:
        return subprocess.check_output(["pkg-config", "--variable=libdir", pkg], text=True).strip()
    except (OSError, subprocess.CalledProcessError):
        return "/usr/lib/x86_64-linux-gnu"


GVC_PLUGINS = os.path.join(pkg_libdir("libgvc"), "graphviz")
WERROR = ["-Werror"] if os.environ.get("GRAFT_WERROR") == "1" else []


class MakeBuildExt(build_ext):
    def run(self):
        jobs = os.environ.get("GRAFT_MAKE_JOBS", "2")
        subprocess.check_call(["make", f"-j{jobs}", "build/libgraft.so", "build/gen/explore_page.h"]
                              + (["WERROR=1"] if WERROR else []), cwd=ROOT)
        super().run()
        for ext in self.extensions:
            shutil.copy2(os.path.join(BUILD, "libgraft.so"), os.path.dirname(self.get_ext_fullpath(ext.name)))


ext = Extension(
    "graft._graft",
    sources=["python/graft/_graft.c", "tools/explore_html.c"],
    # _graft.c includes only graft/graft.h (include/); ROOT and gen are for tools/explore_html.c
    include_dirs=[os.path.join(ROOT, "include"), ROOT, os.path.join(BUILD, "gen"), numpy.get_include()],
    library_dirs=[BUILD, GVC_PLUGINS],
    libraries=["graft", "jansson", "gvc", "cgraph", "cdt", "gvplugin_dot_layout", "gvplugin_core"],
    runtime_library_dirs=["$ORIGIN", GVC_PLUGINS],
    extra_compile_args=["-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Wno-missing-field-initializers",
                        "-Wno-cast-function-type", "-Wno-overlength-strings"] + WERROR,
)

setup(ext_modules=[ext], cmdclass={"build_ext": MakeBuildExt})
