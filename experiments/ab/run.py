"""Run the A/B: every kernel, both arms, several seeds; one store and one log per kernel.

    python -m experiments.ab.run --out DIR [--kernels softmax,matmul] [--seeds 0,1,2]
        [--budget-x 16] [--trials 16] [--cap 40] [--verify-rounds 3] [--jobs 8] [--dry]

Per kernel (one process each, ``--jobs`` at a time; measurements never overlap: a file lock
serializes them across processes, while compiles and ingests run in parallel):

1. calibration: the base configuration measured twice, uncharged; the per-arm GPU budget is
   ``--budget-x`` times the second measurement's charged seconds (same for both arms);
2. for each seed, both arms (the order alternates with the seed) run :func:`search`;
3. verification, uncharged: the base and every arm's best configuration (budgeted and
   fixed-trial) re-timed ``--verify-rounds`` times, interleaved; speed-ups are reported from
   these re-timings, so selecting the luckiest timing during the search inflates nothing.

Writes ``DIR/<kernel>/store.duckdb`` (argusdb), ``DIR/<kernel>/log.jsonl`` (every step with its
charge) and ``DIR/<kernel>/meta.json``; ``--dry`` runs on a CPU under the interpreter with tiny
shapes (see :mod:`experiments.ab.backend`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def run_kernel(name: str, out: Path, seeds: list[int], budget_x: float, trials: int, cap: int,
               verify_rounds: int, gpu: bool, lock: Path | None) -> None:
    from experiments.ab import harness
    from experiments.ab.backend import Bench
    from experiments.ab.evidence import EvidenceStore
    from experiments.ab.optimizer import search

    kdir = out / name
    kdir.mkdir(parents=True, exist_ok=True)
    t_start = time.time()
    mod = harness.load(name)
    store = EvidenceStore(kdir / "store.duckdb", harness.KERNELS_DIR / f"{name}.py")
    bench = Bench(name, mod, store, kdir / "art", gpu=gpu, lock=lock)
    logf = open(kdir / "log.jsonl", "w")

    def log(row: dict[str, Any]) -> None:
        logf.write(json.dumps(row) + "\n")
        logf.flush()

    bench.lineage = {"arm": "calibration"}
    cal = [bench.measure(mod.BASE, None, None) for _ in range(2)]
    for i, c in enumerate(cal):
        log({"kernel": name, "kind": "calibration", "i": i, "ok": c.ok,
             "duration_ns": c.duration_ns, "run_id": c.run_id, "charged_s": c.charged_s,
             "compile_s": c.compile_s,
             "version": c.version, "note": c.note})
    if not cal[-1].ok:
        raise SystemExit(f"{name}: the base configuration failed: {cal[-1].note}")
    budget = budget_x * cal[-1].charged_s
    runs: list[tuple[str, int, list[dict[str, Any]]]] = []
    for seed in seeds:
        arms = ("latency", "evidence") if seed % 2 == 0 else ("evidence", "latency")
        for arm in arms:
            bench.lineage = {"arm": arm, "seed": str(seed)}
            steps = search(name, mod.SPACE, mod.BASE, arm, seed, budget, trials, cap, bench,
                           lambda c: harness.load_region(mod, c), log)
            runs.append((arm, seed, steps))
    # Verification: base and each run's bests, re-timed in interleaved rounds.
    cfgs: dict[str, dict[str, int]] = {harness.key(mod.BASE): dict(mod.BASE)}
    from experiments.ab.summary import best_of
    for _arm, _seed, steps in runs:
        for setting in ("budget", "fixed"):
            b = best_of(steps, setting, trials)
            if b is not None:
                cfgs[harness.key(b["cfg"])] = b["cfg"]
    bench.lineage = {"arm": "verify"}
    for rnd in range(verify_rounds):
        for k, cfg in cfgs.items():
            r = bench.measure(cfg, None, None)
            log({"kernel": name, "kind": "verify", "round": rnd, "key": k, "cfg": cfg,
                 "ok": r.ok, "duration_ns": r.duration_ns, "charged_s": r.charged_s,
                 "version": r.version, "run_id": r.run_id})
    meta = {"kernel": name, "budget_s": budget, "budget_x": budget_x, "trials": trials,
            "cap": cap, "seeds": seeds, "verify_rounds": verify_rounds, "gpu": gpu,
            "launches_per_timing": bench.launches, "shape": list(mod.SHAPES["full" if gpu
                                                                         else "tiny"]),
            "wall_s": time.time() - t_start, "base": mod.BASE, "space": mod.SPACE}
    if gpu:
        import torch
        import triton
        meta.update(device=torch.cuda.get_device_name(), torch=torch.__version__,
                    triton=triton.__version__)
    (kdir / "meta.json").write_text(json.dumps(meta, indent=1))
    logf.close()
    store.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.ab.run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--kernels", default=None, help="comma-separated; default all 8")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--budget-x", type=float, default=16.0,
                    help="GPU budget per arm, in base-configuration measurements (default 16)")
    ap.add_argument("--trials", type=int, default=16, help="the fixed-trial setting's trials")
    ap.add_argument("--cap", type=int, default=40, help="most candidates per run")
    ap.add_argument("--verify-rounds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--dry", action="store_true", help="CPU, interpreter, tiny shapes")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    from experiments.ab import harness
    names = a.kernels.split(",") if a.kernels else list(harness.NAMES)
    unknown = [n for n in names if n not in harness.NAMES]
    if unknown:
        print(f"error: unknown kernel(s) {', '.join(unknown)}; choose from "
              f"{', '.join(harness.NAMES)}", file=sys.stderr)
        return 2
    seeds = [int(s) for s in a.seeds.split(",")]
    a.out.mkdir(parents=True, exist_ok=True)
    if a.dry:
        from experiments.ab.backend import interpret_env
        interpret_env()
    if a.one:
        run_kernel(a.one, a.out, seeds, a.budget_x, a.trials, a.cap, a.verify_rounds,
                   not a.dry, None if a.dry else a.out / "gpu.lock")
        return 0
    procs: list[tuple[str, subprocess.Popen[bytes]]] = []
    pending = list(names)
    failed = []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    while pending or procs:
        while pending and len(procs) < a.jobs:
            n = pending.pop(0)
            cmd = [sys.executable, "-m", "experiments.ab.run", "--out", str(a.out), "--one", n,
                   "--seeds", a.seeds, "--budget-x", str(a.budget_x), "--trials",
                   str(a.trials), "--cap", str(a.cap), "--verify-rounds", str(a.verify_rounds)]
            if a.dry:
                cmd.append("--dry")
            lf = open(a.out / f"{n}.log", "wb")
            procs.append((n, subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT,
                                              env=env, cwd=ROOT)))
        time.sleep(0.5)
        for n, p in list(procs):
            if p.poll() is not None:
                procs.remove((n, p))
                print(f"{n}: exit {p.returncode}", flush=True)
                if p.returncode:
                    failed.append(n)
    from experiments.ab.summary import main as summary_main
    summary_main([str(a.out)])
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
