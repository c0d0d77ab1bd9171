"""Warnings that point at the user's line.

A warning raised deep in a fit (a reducer, a seeder, the driver) is reached through a call
depth that depends on the entry point (``fit``, ``fit_predict``, ``partial_fit``, a pilot
fit inside a seeder, :func:`~clusterkit.ablate`, ...), so no fixed ``stacklevel`` is right.
:func:`warn` computes it: the first frame outside the clusterkit package, as Python 3.12's
``warnings.warn(..., skip_file_prefixes=...)`` does (clusterkit supports Python 3.10+).
"""
import os
import sys
import warnings

__all__ = ["warn"]

#: Frames whose file is under this folder (the package, this module's parent's parent) are
#: the library's own.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def warn(message, category):
    """``warnings.warn(message, category)`` attributed to the first caller outside clusterkit
    (its file and line appear in the warning, and its module's filters apply)."""
    frame, stacklevel = sys._getframe(1), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(
            _PACKAGE_DIR):
        frame, stacklevel = frame.f_back, stacklevel + 1
    warnings.warn(message, category, stacklevel=stacklevel)
