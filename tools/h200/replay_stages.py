"""Summary of tools/h200/replay_stages.sh: per request, the process wall, each task's wall and
the stages its result recorded, and when the first evidence came after the measured launch.

    python3 tools/h200/replay_stages.py WORK_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _report(path: Path) -> dict[str, Any] | None:
    try:
        lines = path.read_text().strip().splitlines()
        return json.loads(lines[-1]) if lines else None
    except (OSError, ValueError):
        return None


def first_evidence_after_launch(work: Path, name: str, mode: str) -> str:
    """Seconds from the measured launch (the hooks' clock, on the wall clock) to the stamped
    stderr line that printed the in-context duration."""
    log = work / f"{name}.{mode}.log"
    runs = sorted((work / f"{name}.{mode}.runs").glob("*/find_launch"))
    if not log.exists() or not runs:
        return "n/a"
    res = _load(runs[0] / "result.json") or {}
    launch_docs = [d for d in (_load(p) for p in runs[0].glob("launch.*.json")) if d]
    doc = next((d for d in launch_docs if d.get("launches")), None)
    if doc is None or not doc.get("clock_pair"):
        return "n/a"
    perf, unix = doc["clock_pair"]
    i = res.get("measured_launch")
    t_ns = next((x["t_ns"] for x in doc["launches"] if x["i"] == i), None)
    if t_ns is None:
        return "n/a"
    at = unix + (t_ns - perf) / 1e9
    start = None
    for line in log.read_text().splitlines():
        stamp, _, text = line.partition(" ")
        if text == "START":
            start = float(stamp)
        if "in the program: median" in text or ("in-context" in text and "argus:" in text):
            return (f"{float(stamp) - at:.2f} s after the measured launch "
                    f"({at - (start or at):.2f} s after argus started)")
    return "not printed"


def main(work: Path) -> None:
    print((work / "walls.txt").read_text())
    for rep_path in sorted(work.glob("*.json")):
        name, _, mode = rep_path.stem.partition(".")
        rep = _report(rep_path)
        if rep is None:
            print(f"== {rep_path.stem}: no report")
            continue
        print(f"== {rep_path.stem}: ok={rep.get('ok')} tasks {rep.get('wall_s', 0):.2f} s")
        base = next(iter(sorted((work / f"{name}.{mode}.runs").glob("*"))), None)
        for t in rep.get("tasks", []):
            short = t["id"].split(".", 1)[1]
            line = f"  {short:28s} {t['status']:8s} wall {t['wall_s'] or 0:6.2f}"
            res = _load(base / short.replace("/", "_") / "result.json") if base else None
            if res:
                for k in ("exit_stages_s", "stages_s"):
                    if res.get(k):
                        line += f" {k}={res[k]}"
                if res.get("gpu_s") is not None and short == "find_launch":
                    line += f" program_process_s={res['gpu_s']:.2f}"
                if res.get("pass_lines"):
                    line += f" passes={res['pass_lines'][-1].split('-')[-1].strip()}"
                if res.get("replay_fallback"):
                    line += f" FALLBACK={res['replay_fallback']}"
            print(line)
        att = rep.get("attribution", {}).get("inst_executed", {})
        print(f"  inst_executed attributed={att.get('attributed')} observed="
              f"{att.get('observed')} unattributed={att.get('unattributed_share')}")
        print(f"  first evidence: {first_evidence_after_launch(work, name, mode)}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
