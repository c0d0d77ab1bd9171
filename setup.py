"""Build the Cython kernels of clusterkit (metadata lives in pyproject.toml).

Every ``clusterkit/**/*.pyx`` becomes an extension module compiled with ``-O3`` and OpenMP.
When the compiler cannot build an OpenMP program the kernels are built serially (the
``prange`` loops then run on one thread) and the build says so once.

Environment switches: ``CLUSTERKIT_NO_OPENMP=1`` (build without OpenMP),
``CLUSTERKIT_CYTHON_DEBUG=1`` (bounds, wraparound and initialisation checks on),
``CLUSTERKIT_CYTHON_ANNOTATE=1`` (write the ``cython -a`` HTML next to each ``.pyx``),
``CLUSTERKIT_BUILD_ONLY=_assign,_mstep`` (while developing: build only these modules).

Builds are reused. An editable install (``pip install -e .``) compiles into temporary folders
and then copies each module into the source tree (``clusterkit/_kernels/<name>.cpython-*.so``);
next to each this build writes ``<module file>.stamp`` with the switches and versions the module
was built with (``CLUSTERKIT_NO_OPENMP``, ``CLUSTERKIT_CYTHON_DEBUG``, Cython, NumPy, SciPy).
A later build neither cythonizes nor compiles a module that is newer than the ``.pyx``, ``.pxd``
and ``.h`` files of its folder and this ``setup.py``, and whose stamp matches the current
switches and versions: it copies the in-source module to the build's output and says so in one
line. So ``pip install -e ".[test]"`` after ``pip install -e .`` compiles nothing. (Cythonize's
own check cannot decide this: pip's isolated build environment is new each time, so the Cython
and NumPy ``.pxd`` files it ships look newer than every generated ``.c`` file.) Delete the
stamps, or pass ``build_ext --force``, to build everything again.
"""
import json
import os
import sys
import tempfile
import textwrap
from pathlib import Path

import Cython
import numpy as np
import scipy
import sysconfig
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
    """Add OpenMP flags to every extension if a test program with them compiles and links;
    reuse an up-to-date in-source module built with the same switches instead of compiling."""

    def build_extensions(self):
        # nothing to compile when every module is reused: no OpenMP probe either
        compiles = self.force or any(getattr(ext, "reuse", None) is None for ext in self.extensions)
        flags = self._openmp_flags() if compiles else []
        for ext in self.extensions:
            ext.extra_compile_args += flags
            ext.extra_link_args += flags
        self._reused = []
        super().build_extensions()
        if self._reused:
            print(f"clusterkit: reused {len(self._reused)} of {len(self.extensions)} extension "
                  f"modules built earlier in the source tree (newer than their sources, same "
                  f"build switches), not compiled: {', '.join(self._reused)}")

    def build_extension(self, ext):
        source_module = getattr(ext, "reuse", None)
        if source_module is None or self.force:
            if source_module is not None:  # --force: the .c file may be stale or absent
                ext.sources = _cythonize([ext])[0].sources
            # always compile: a module left in build/ may be newer than its .c file but built
            # with other switches
            force, self.force = self.force, True
            try:
                return super().build_extension(ext)
            finally:
                self.force = force
        target = self.get_ext_fullpath(ext.name)
        if os.path.abspath(source_module) != os.path.abspath(target):
            self.mkpath(os.path.dirname(target))
            self.copy_file(source_module, target)
        self._reused.append(ext.name.rpartition(".")[2])

    def copy_extensions_to_source(self):
        # an editable install (or build_ext --inplace) puts the modules into the source tree:
        # record what they were built with, for the next build to compare
        super().copy_extensions_to_source()
        for ext in self.extensions:
            source_module = _in_source_module(ext.name)
            if os.path.exists(source_module):
                Path(source_module + ".stamp").write_text(_stamp() + "\n")

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


def _in_source_module(name):
    """The module file an editable or in-place build puts next to the ``.pyx`` of ``name``."""
    suffix = os.environ.get("SETUPTOOLS_EXT_SUFFIX") or sysconfig.get_config_var("EXT_SUFFIX")
    return os.path.join(*name.split(".")) + suffix


def _stamp():
    """What a built module depends on besides the files of its folder and this setup.py."""
    return json.dumps({
        "CLUSTERKIT_NO_OPENMP": _flag("CLUSTERKIT_NO_OPENMP"),
        "CLUSTERKIT_CYTHON_DEBUG": _flag("CLUSTERKIT_CYTHON_DEBUG"),
        "cython": Cython.__version__,
        "numpy": np.__version__,
        "scipy": scipy.__version__,
    }, sort_keys=True)


def _reusable(pyx, source_module):
    """Whether the in-source module of ``pyx`` is up to date with the same switches."""
    stamp = Path(source_module + ".stamp")
    if not (os.path.exists(source_module) and stamp.exists()):
        return False
    if stamp.read_text().strip() != _stamp():
        return False
    depends = [pyx, Path("setup.py")]
    depends += [path for pattern in ("*.pyx", "*.pxd", "*.h") for path in pyx.parent.glob(pattern)]
    built = os.path.getmtime(source_module)
    return all(os.path.getmtime(path) < built for path in depends)


def _cythonize(exts):
    debug = _flag("CLUSTERKIT_CYTHON_DEBUG")
    directives = {
        "language_level": 3,
        "boundscheck": debug,
        "wraparound": debug,
        "initializedcheck": debug,
        "nonecheck": False,
        "cdivision": True,
    }
    return cythonize(
        exts,
        compiler_directives=directives,
        annotate=_flag("CLUSTERKIT_CYTHON_ANNOTATE"),
        nthreads=os.cpu_count() or 1,
        # cythonize regenerates a .c file only when its .pyx is newer, not when the checks
        # change: the checked C code lives apart, so that neither build reuses the other's
        build_dir=os.path.join("build", "cython-debug") if debug else None,
    )


def extensions():
    only = [m for m in os.environ.get("CLUSTERKIT_BUILD_ONLY", "").split(",") if m]
    to_cythonize, reused = [], []
    for pyx in sorted(Path("clusterkit").rglob("*.pyx")):
        if only and pyx.stem not in only:
            continue
        name = ".".join(pyx.with_suffix("").parts)
        ext = Extension(
            name,
            [str(pyx)],
            include_dirs=[np.get_include(), str(pyx.parent)],
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_22_API_VERSION")],
            extra_compile_args=["-O3"] if os.name != "nt" else ["/O2"],
        )
        source_module = _in_source_module(name)
        if _reusable(pyx, source_module):
            ext.reuse = source_module  # copied by build_ext, neither cythonized nor compiled
            reused.append(ext)
        else:
            to_cythonize.append(ext)
    exts = (_cythonize(to_cythonize) if to_cythonize else []) + reused
    return sorted(exts, key=lambda ext: ext.name)


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExtWithOpenMP})
