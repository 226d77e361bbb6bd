#!/usr/bin/env python3
"""One collection of one program version on the local GPU, for the runner's live backend.

``argusdb.runner.backends.LiveBackend`` starts one worker process per task, so CUPTI, Proton and
Nsight Compute never share a process:

    python3 gpu/worker.py ACTION --source KERNEL.py --config NAME --out DIR \\
        [--parent PARENT.py] [--params JSON] [--overrides JSON]

ACTION is ``find_launch``, ``cupti_timing``, ``ncu_source``, ``proton_instr`` or
``proton_pcsampling`` (a plan's actions). The source follows the harness contract of
``gpu/kernels/`` (``KERNEL``, ``CONFIGS``, ``setup``, ``launch``, ``result``, ``reference``).
With ``--parent`` (a variant) the worker first checks that the variant computes the parent's
result. It writes its artefacts and ``DIR/result.json``: ``files``, ``gpu_s`` (seconds from the
first CUDA work to the last), ``rel_err_vs_parent``/``rel_err_vs_torch``, ``median_us``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from record import Activity, kernel_durations_us, load_module, ncu_path

# Proton instrumentation keeps every scope event of every warp: the full shapes would give
# traces of hundreds of MB, so instrumented runs use these shapes (per program).
PROTON_SIZES = {"softmax": {"rows": 512}, "matmul": {"n": 1024},
                "attention": {"batch": 1, "heads": 4, "n_ctx": 1024}}


def sync() -> None:
    import torch

    torch.cuda.synchronize()


def launch_options(mod, config: str, overrides: dict) -> dict:
    return {**mod.CONFIGS[config], **overrides}


def check(mod, t: dict, opts: dict, parent_path: str | None, config: str) -> dict:
    """Launch once; relative error vs torch and, for a variant, vs the parent's output."""
    mod.launch(t, **opts)
    sync()
    out = mod.result(t).clone()
    res = {"rel_err_vs_torch": mod.rel_err(out, mod.reference(t))}
    if parent_path:
        parent = load_module(Path(parent_path), "argus_parent")
        parent.launch(t, **parent.CONFIGS[config])
        sync()
        res["rel_err_vs_parent"] = mod.rel_err(out, parent.result(t).double())
        mod.launch(t, **opts)  # leave the variant's output in place
        sync()
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("action", choices=["find_launch", "cupti_timing", "ncu_source",
                                       "proton_instr", "proton_pcsampling", "child"])
    ap.add_argument("--source", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--out", type=Path, default=Path("."))
    ap.add_argument("--parent")
    ap.add_argument("--params", default="{}")
    ap.add_argument("--overrides", default="{}")
    ap.add_argument("--launches", type=int, default=4)
    a = ap.parse_args()
    params, overrides = json.loads(a.params), json.loads(a.overrides)
    mod = load_module(Path(a.source), "argus_subject")
    opts = launch_options(mod, a.config, overrides)
    if a.action == "child":  # the process ncu profiles
        t = mod.setup()
        for _ in range(a.launches):
            mod.launch(t, **opts)
        sync()
        return
    a.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    res: dict = {"kernel": mod.KERNEL, "config": a.config, "files": []}
    if a.action == "proton_instr":
        res.update(proton_instr(mod, opts, a, params))
    elif a.action == "ncu_source":
        res.update(ncu_source(mod, a, params))
    else:
        t = mod.setup()
        res.update(check(mod, t, opts, a.parent, a.config))
        if a.action == "cupti_timing":
            res.update(cupti_timing(mod, t, opts, a.out, params))
        elif a.action == "proton_pcsampling":
            res.update(pcsampling(mod, t, opts, a.out, params))
    res["gpu_s"] = time.perf_counter() - t0
    (a.out / "result.json").write_text(json.dumps(res, indent=1))


def cupti_timing(mod, t: dict, opts: dict, out: Path, params: dict) -> dict:
    act = Activity()
    for _ in range(int(params.get("launches_warmup", 3))):
        mod.launch(t, **opts)
    sync()
    act.start()
    for _ in range(int(params.get("launches", 20))):
        mod.launch(t, **opts)
    recs = act.stop(out / "timing.cupti.jsonl")
    d = kernel_durations_us(recs, mod.KERNEL)
    return {"files": ["timing.cupti.jsonl"], "launches": len(d),
            "median_us": statistics.median(d) if d else None}


def ncu_source(mod, a: argparse.Namespace, params: dict) -> dict:
    ncu = ncu_path()
    if ncu is None:
        raise SystemExit("ncu not found")
    rep = a.out / "ncu"
    sections = list(params.get("sections") or [])
    metrics = list(params.get("metrics") or [])
    cmd = [ncu, "--clock-control", "none", "-k", f"regex:^{mod.KERNEL}$", "--launch-skip", "2",
           "--launch-count", "1", "--import-source", "yes", "-f", "-o", str(rep)]
    for s in sections:
        cmd += ["--section", s]
    if metrics:
        cmd += ["--metrics", ",".join(metrics)]
    cmd += [sys.executable, str(Path(__file__).resolve()), "child", "--source", a.source,
            "--config", a.config, "--overrides", a.overrides, "--launches", "3"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    (a.out / "ncu.log").write_text(p.stdout + p.stderr)
    if p.returncode != 0:
        raise SystemExit(f"ncu failed: {(p.stdout + p.stderr)[-500:]}")
    files = []
    pages = [("raw", "raw.csv", [])]
    if "SourceCounters" in sections:
        pages.insert(0, ("source", "source.csv", ["--print-source", "cuda,sass"]))
    for page, name, extra in pages:
        q = subprocess.run([ncu, "-i", f"{rep}.ncu-rep", "--page", page, "--csv", *extra],
                           capture_output=True, text=True, check=True)
        (a.out / f"ncu.{name}").write_text(q.stdout)
        files.append(f"ncu.{name}")
    passes = [ln for ln in (p.stdout + p.stderr).splitlines()
              if "==PROF== Profiling" in ln and " pass" in ln]
    return {"files": files, "pass_lines": passes, "cmd": " ".join(cmd)}


def proton_instr(mod, opts: dict, a: argparse.Namespace, params: dict) -> dict:
    import triton.profiler as proton

    size = PROTON_SIZES.get(Path(a.source).stem, {})
    t = mod.setup(**size)
    proton.start(str(a.out / "instr"), backend="instrumentation", data="trace")
    mod.launch(t, **opts)
    sync()
    proton.finalize(output_format="chrome_trace")
    res = {"files": ["instr.chrome_trace"], "size": size,
           "rel_err_vs_torch": mod.rel_err(mod.result(t), mod.reference(t))}
    if a.parent:
        # the instrumented binary differs from the plain one: compare against the parent here
        parent = load_module(Path(a.parent), "argus_parent")
        out = mod.result(t).clone()
        parent.launch(t, **parent.CONFIGS[a.config])
        sync()
        res["rel_err_vs_parent"] = mod.rel_err(out, parent.result(t).double())
    return res


def pcsampling(mod, t: dict, opts: dict, out: Path, params: dict) -> dict:
    import triton.profiler as proton

    proton.start(str(out / "pcs"), mode="pcsampling")
    with proton.scope(mod.KERNEL):
        for _ in range(int(params.get("launches", 20))):
            mod.launch(t, **opts)
    sync()
    proton.finalize()
    return {"files": ["pcs.hatchet"]}


if __name__ == "__main__":
    main()
