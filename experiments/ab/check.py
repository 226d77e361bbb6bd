"""Check the benchmark's kernels on a CPU: Triton's interpreter, tiny shapes, fp64 references.

    python -m experiments.ab.check [KERNEL...]     # prints one JSON object per kernel

For each kernel: the base configuration and every one-step move from it (relative error against
the torch reference, or ``null`` when the shape cannot take the configuration), and the
forced-wait variant of its load region (the probe the evidence arm pays for). Runs in a process
of its own because the interpreter patches ``triton.language`` for the rest of the process.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any


def _run(mod: ModuleType, cfg: dict[str, int]) -> float | None:
    from experiments.ab import harness

    t = mod.setup("tiny", "cpu")
    try:
        launch = harness.bind(mod, t, cfg)
    except ValueError:
        return None
    launch()
    return harness.rel_err(mod, t)


def check(name: str, tmp: Path) -> dict[str, Any]:
    from argusdb.collectors.regions import ProgramSource
    from argusdb.observe.transforms.forced_wait import forced_wait
    from experiments.ab import harness

    mod = harness.load(name)
    out: dict[str, Any] = {"kernel": name, "tol": mod.TOL, "base": _run(mod, mod.BASE),
                           "moves": {}}
    for mv in harness.moves(mod.SPACE, mod.BASE):
        out["moves"][mv.name] = _run(mod, mv.cfg())
    src = ProgramSource.from_path(harness.KERNELS_DIR / f"{name}.py")
    region = harness.load_region(mod, mod.BASE)
    var = forced_wait(src, f"{src.stem}/{mod.KERNEL}/{region}")
    path = tmp / name / src.name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(var.source.text)
    out["probe"] = {"transform": var.transform,
                    "rel_err": _run(harness.load(f"{name}_probe", path), mod.BASE)}
    return out


def main(argv: list[str] | None = None) -> int:
    from experiments.ab import harness
    from experiments.ab.backend import interpret_env

    names = (sys.argv[1:] if argv is None else argv) or list(harness.NAMES)
    unknown = [n for n in names if n not in harness.NAMES]
    if unknown:
        print(f"error: unknown kernel(s) {', '.join(unknown)}; choose from "
              f"{', '.join(harness.NAMES)}", file=sys.stderr)
        return 2
    interpret_env()
    with tempfile.TemporaryDirectory() as tmp:
        for n in names:
            print(json.dumps(check(n, Path(tmp))), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
