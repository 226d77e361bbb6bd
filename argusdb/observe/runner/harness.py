"""What the runner needs to know about a kernel source, read without importing it.

A source that the runner can execute follows the harness contract of ``argusdb/demo/kernels/``:
module-level ``KERNEL`` (the ``@triton.jit`` function launched) and ``CONFIGS`` (name → launch
options, the first being the default), and ``setup``/``launch``/``result``/``reference``
functions. Only the literals are read here (``ast.literal_eval``): planning and replay need no
torch.

Example:
    >>> h = Harness.read(ProgramSource.from_path("argusdb/demo/kernels/matmul.py"))
    >>> h.kernel, h.default_config
    ('matmul_kernel', 'bk64_s3')
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from argusdb.collectors.regions import ProgramSource
from argusdb.errors import InputError


@dataclass(frozen=True)
class Harness:
    """The launch contract of a kernel source."""

    kernel: str
    configs: dict[str, dict[str, Any]]

    @property
    def default_config(self) -> str:
        return next(iter(self.configs))

    @classmethod
    def read(cls, src: ProgramSource) -> Harness:
        """Read ``KERNEL`` and ``CONFIGS`` from the module's top level.

        Raises:
            InputError: the source does not follow the harness contract.
        """
        found: dict[str, Any] = {}
        for stmt in ast.parse(src.text).body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(
                    stmt.targets[0], ast.Name) and stmt.targets[0].id in ("KERNEL", "CONFIGS"):
                try:
                    found[stmt.targets[0].id] = ast.literal_eval(stmt.value)
                except ValueError as exc:
                    raise InputError(src.name, f"{stmt.targets[0].id} is not a literal ({exc})",
                                     "write KERNEL and CONFIGS as plain literals") from exc
        missing = [k for k in ("KERNEL", "CONFIGS") if k not in found]
        if missing or not isinstance(found.get("CONFIGS"), dict) or not found["CONFIGS"]:
            raise InputError(src.name, f"no launch harness ({', '.join(missing) or 'CONFIGS'} "
                             "missing or empty)",
                             "define KERNEL, CONFIGS and setup/launch/result/reference as the "
                             "kernels in argusdb/demo/kernels/ do")
        return cls(str(found["KERNEL"]), {str(k): dict(v) for k, v in found["CONFIGS"].items()})
