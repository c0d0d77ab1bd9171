"""Build the Cython kernels of clusterkit (metadata lives in pyproject.toml).

Every ``clusterkit/**/*.pyx`` becomes an extension module compiled with ``-O3`` and OpenMP.
When the compiler cannot build an OpenMP program the kernels are built serially (the
``prange`` loops then run on one thread) and the build says so once.

Environment switches: ``CLUSTERKIT_NO_OPENMP=1`` (build without OpenMP),
``CLUSTERKIT_CYTHON_DEBUG=1`` (bounds, wraparound and initialisation checks on),
``CLUSTERKIT_CYTHON_ANNOTATE=1`` (write the ``cython -a`` HTML next to each ``.pyx``),
``CLUSTERKIT_BUILD_ONLY=_assign,_mstep`` (while developing: build only these modules).
"""
import os
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

OPENMP_TEST = textwrap.dedent(
    """
    #include <omp.h>
    int main(void) {
        int n = 0;
        #pragma omp parallel reduction(+:n)
        n += omp_get_num_threads() > 0;
        return n > 0 ? 0 : 1;
    }
    """
)


def _flag(name):
    return os.environ.get(name, "0") not in ("", "0")


class BuildExtWithOpenMP(build_ext):
    """Add OpenMP flags to every extension if a test program with them compiles and links."""

    def build_extensions(self):
        flags = self._openmp_flags()
        for ext in self.extensions:
            ext.extra_compile_args += flags
            ext.extra_link_args += flags
        super().build_extensions()

    def _openmp_flags(self):
        if _flag("CLUSTERKIT_NO_OPENMP"):
            print("clusterkit: CLUSTERKIT_NO_OPENMP is set; building without OpenMP (serial kernels).")
            return []
        flag = "/openmp" if self.compiler.compiler_type == "msvc" else "-fopenmp"
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "openmp_test.c"
            src.write_text(OPENMP_TEST)
            try:
                objects = self.compiler.compile([str(src)], output_dir=tmp, extra_postargs=[flag])
                self.compiler.link_executable(
                    objects, "openmp_test", output_dir=tmp, extra_postargs=[flag]
                )
            except Exception:  # any compiler or linker failure means: no usable OpenMP
                print(
                    "clusterkit: WARNING: the C compiler cannot build OpenMP programs; "
                    "kernels are built serially (n_threads has no effect).",
                    file=sys.stderr,
                )
                return []
        return [flag]


def extensions():
    debug = _flag("CLUSTERKIT_CYTHON_DEBUG")
    directives = {
        "language_level": 3,
        "boundscheck": debug,
        "wraparound": debug,
        "initializedcheck": debug,
        "nonecheck": False,
        "cdivision": True,
    }
    only = [m for m in os.environ.get("CLUSTERKIT_BUILD_ONLY", "").split(",") if m]
    exts = []
    for pyx in sorted(Path("clusterkit").rglob("*.pyx")):
        if only and pyx.stem not in only:
            continue
        name = ".".join(pyx.with_suffix("").parts)
        exts.append(
            Extension(
                name,
                [str(pyx)],
                include_dirs=[np.get_include(), str(pyx.parent)],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_22_API_VERSION")],
                extra_compile_args=["-O3"] if os.name != "nt" else ["/O2"],
            )
        )
    return cythonize(
        exts,
        compiler_directives=directives,
        annotate=_flag("CLUSTERKIT_CYTHON_ANNOTATE"),
        nthreads=os.cpu_count() or 1,
        # cythonize regenerates a .c file only when its .pyx is newer, not when the checks
        # change: the checked C code lives apart, so that neither build reuses the other's
        build_dir=os.path.join("build", "cython-debug") if debug else None,
    )


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExtWithOpenMP})
