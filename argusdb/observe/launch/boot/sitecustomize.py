"""argusdb's bootstrap: installs the launcher's Triton hooks before the program's own imports.

On ``PYTHONPATH`` (first) with ``ARGUS_LAUNCH_SPEC`` set, Python imports this module at start-up
in every process of a command (subprocesses and ``torchrun`` ranks inherit the environment). It
then runs the environment's own ``sitecustomize``, if there is one further down the path.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys


def _argus() -> None:
    from argusdb.observe.launch.hooks import install_from_env

    install_from_env()


def _chain() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None and spec.origin != __file__:
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)


if os.environ.get("ARGUS_LAUNCH_SPEC"):
    _argus()
_chain()
