"""SciPy's special functions loaded without the ``scipy.special`` package
(:mod:`argusdb.answers.special`): the same function objects, so the same values, and the real
package still importable after them."""

from __future__ import annotations

import subprocess
import sys

from argusdb.answers.special import ufuncs

_FRESH = """
import sys
from argusdb.answers.special import ufuncs
u = ufuncs()
assert "scipy.special" not in sys.modules, "the bare package was left in sys.modules"
assert "numpy.f2py" not in sys.modules and "numpy.random" not in sys.modules
from scipy import special
assert special.__file__ and special.__file__.endswith("__init__.py"), special
assert hasattr(special, "logsumexp"), "the real package did not load"
for name in ("betainc", "gammaln", "ndtr", "binom"):
    assert getattr(special, name) is getattr(u, name), name
print("ok", u.betainc(3, 4, 0.25), u.ndtr(-1.5), u.binom(10, 4))
"""


def test_fresh_process_loads_the_ufuncs_alone_then_the_real_package() -> None:
    out = subprocess.run([sys.executable, "-c", _FRESH], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok ")


def test_values_are_scipys() -> None:
    from scipy import special

    u = ufuncs()
    for name, args in (("betainc", (5, 7, 0.3)), ("gammaln", (41.0,)), ("ndtr", (-2.25,)),
                       ("binom", (30, 12))):
        assert getattr(u, name)(*args) == getattr(special, name)(*args), name
