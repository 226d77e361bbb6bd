"""Turn the task folders of ``tools/h200/observe_compile.sh``'s runs into replay bundles.

``python3 tools/h200/compile_bundles.py WORK NAME...``: for each NAME whose ``WORK/NAME.json``
(the ``--json`` report) names a plan, copies ``WORK/observe.duckdb.runs/<plan>/`` to
``WORK/NAME/`` in the layout ``ARGUS_REPLAY`` reads (``CommandReplayBackend``: each task's
``result.json`` and the files it lists), small enough to keep in ``tests/data/gpu/compile``:

- files over 200 kB that a ``result.json`` lists, and Proton's chrome traces, are gzipped and
  listed under their new names (the readers take ``.gz``);
- the control task's copies of the in-context timing (``timing.*.cupti.jsonl``,
  ``apart.*.jsonl``) go: ``cupti_timing.parent`` holds the timing the replay ingests;
- of Inductor's cache only the wrapper code stays (the ``.py`` that holds an
  ``async_compile.triton(...)`` of every kernel the graph launched), gzipped, with the copy of
  the user's kernel (``inductor_kernel.<hash>.py``): Python files in a data folder would be
  counted as code.
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
from pathlib import Path

LARGE = 200_000


def _gzip(path: Path) -> Path:
    out = path.with_name(path.name + ".gz")
    with open(path, "rb") as src, gzip.open(out, "wb", 9) as dst:
        shutil.copyfileobj(src, dst)
    path.unlink()
    return out


def bundle(work: Path, name: str) -> Path | None:
    """Write ``work/name`` from the plan of ``work/name.json``; None where there is no plan."""
    try:
        plan = json.loads((work / f"{name}.json").read_text())["plan_id"]
    except (OSError, ValueError, KeyError):
        return None
    src = work / "observe.duckdb.runs" / plan
    if not src.is_dir():
        return None
    dst = work / name
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    for res in dst.glob("*/result.json"):
        doc = json.loads(res.read_text())
        files = list(doc.get("files") or [])
        for i, f in enumerate(files):
            p = res.parent / f
            if not p.exists() and p.with_name(p.name + ".gz").exists():
                files[i] = f + ".gz"
            elif p.exists() and (p.stat().st_size > LARGE or f.endswith(".chrome_trace")):
                files[i] = _gzip(p).name
        if files != doc.get("files", []):
            res.write_text(json.dumps({**doc, "files": files}, indent=1) + "\n")
    control = dst / "find_launch"
    for pattern in ("timing.*.cupti.jsonl", "apart.*.jsonl"):
        for p in control.glob(pattern):
            p.unlink()
    cache = control / "inductor_cache"
    if cache.is_dir():
        for p in sorted(cache.rglob("*")):
            if p.is_file() and (p.suffix != ".py" or "async_compile.triton(" not in p.read_text()):
                p.unlink()
        for d in sorted((d for d in cache.rglob("*") if d.is_dir()), reverse=True):
            if not any(d.iterdir()):
                d.rmdir()
        for p in cache.rglob("*.py"):
            _gzip(p)
    for p in control.glob("inductor_kernel.*.py"):
        _gzip(p)
    return dst


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: compile_bundles.py WORK NAME...", file=sys.stderr)
        return 2
    work = Path(argv[0])
    for name in argv[1:]:
        out = bundle(work, name)
        print(f"bundle {name}: {out if out else 'no plan (no report or no task folders)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
