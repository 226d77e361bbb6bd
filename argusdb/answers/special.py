"""SciPy's compiled special functions (``betainc``, ``gammaln``, ``ndtr``, ``binom``) without
importing the ``scipy.special`` package.

``import scipy.special`` runs its array-API layer, which star-imports NumPy and so loads
``numpy.f2py``, ``numpy.random``, ``numpy.testing`` and more: ~0.2 s CPU (0.5 s under
``-X importtime``) on every command that prints one statistic, where the functions themselves
live in one extension module, ``scipy.special._ufuncs``, that loads in ~0.02 s. :func:`ufuncs`
loads that module alone: while it loads, ``sys.modules`` holds a bare package named
``scipy.special`` (its ``__path__`` only) so that the module's own relative imports
(``._ufuncs_cxx``, ``._special_ufuncs``) resolve, and the bare package is removed after it.
A later ``import scipy.special`` then runs the real package, which finds ``_ufuncs`` loaded
and exports the very same function objects (``tests/answers/test_special.py``), so every
value is scipy's bit for bit. Where ``scipy.special`` is loaded already it is used as it is.

Example:
    >>> float(ufuncs().ndtr(0.0))
    0.5
"""

from __future__ import annotations

import importlib
import sys
import threading
import types
from pathlib import Path
from typing import Any

_lock = threading.Lock()


def ufuncs() -> Any:
    """``scipy.special._ufuncs`` (or ``scipy.special`` when loaded): ``betainc``,
    ``gammaln``, ``ndtr`` and ``binom`` are its attributes."""
    loaded = sys.modules.get("scipy.special") or sys.modules.get("scipy.special._ufuncs")
    if loaded is not None and not getattr(loaded, "_argusdb_bare", False):
        return loaded
    with _lock:
        if (done := sys.modules.get("scipy.special._ufuncs")) is not None:
            return done
        import scipy

        bare = types.ModuleType("scipy.special")
        bare.__path__ = [str(Path(scipy.__path__[0]) / "special")]
        bare.__package__ = "scipy.special"
        bare._argusdb_bare = True  # type: ignore[attr-defined]
        sys.modules["scipy.special"] = bare
        try:
            return importlib.import_module("scipy.special._ufuncs")
        finally:
            if sys.modules.get("scipy.special") is bare:
                del sys.modules["scipy.special"]
