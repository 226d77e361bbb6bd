"""One collection of one program version on the local GPU, for the runner's live backend.

``argusdb.observe.runner.backends.LiveBackend`` starts one worker process per task, so CUPTI,
Proton and
Nsight Compute never share a process:

    python -m argusdb.observe.runner.worker ACTION --source KERNEL.py --config NAME --out DIR \\
        [--parent PARENT.py] [--params JSON] [--overrides JSON]

ACTION is ``find_launch``, ``cupti_timing``, ``ncu_source``, ``proton_instr`` or
``proton_pcsampling`` (a plan's actions); ``serve`` runs such jobs from stdin in one process.
The source follows the harness contract of ``argusdb/demo/kernels/`` (``KERNEL``, ``CONFIGS``,
``setup``, ``launch``, ``result``, ``reference``).
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
from typing import Any

from argusdb.observe.runner.gpu_tools import Activity, kernel_durations_us, load_module, ncu_path

# Proton instrumentation keeps every scope event of every warp: full shapes can give traces of
# hundreds of MB, so an instrumented run takes the harness's own ``PROTON_SIZE`` (setup keyword
# arguments) or the task's ``params.proton_size``; never a guess from the file name.


def sync() -> None:
    import torch

    torch.cuda.synchronize()


def launch_options(mod: Any, config: str, overrides: dict[str, Any]) -> dict[str, Any]:
    return {**mod.CONFIGS[config], **overrides}


def check(mod: Any, t: dict[str, Any], opts: dict[str, Any], parent_path: str | None,
          config: str) -> dict[str, Any]:
    """Launch once; relative error vs torch and, for a variant, vs the parent's output."""
    mod.launch(t, **opts)
    sync()
    out = mod.result(t).clone()
    res: dict[str, Any] = {"rel_err_vs_torch": mod.rel_err(out, mod.reference(t))}
    if parent_path:
        parent = load_module(Path(parent_path), f"argus_parent_{next(_JOBS)}")
        parent.launch(t, **parent.CONFIGS[config])
        sync()
        res["rel_err_vs_parent"] = mod.rel_err(out, parent.result(t).double())
        mod.launch(t, **opts)  # leave the variant's output in place
        sync()
    return res


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("action", choices=["find_launch", "cupti_timing", "ncu_source",
                                       "proton_instr", "proton_pcsampling", "child", "serve"])
    ap.add_argument("--source", help="kernel source (every action but serve)")
    ap.add_argument("--config", help="harness configuration (every action but serve)")
    ap.add_argument("--out", type=Path, default=Path("."))
    ap.add_argument("--parent")
    ap.add_argument("--params", default="{}")
    ap.add_argument("--overrides", default="{}")
    ap.add_argument("--launches", type=int, default=4)
    return ap


_JOBS = iter(range(1 << 30))


def serve() -> None:
    """Run jobs from stdin (one JSON argument list per line) in this one process.

    The runner keeps one such process per plan for the collections that can share it (the
    launch check and clean timings: cupti-python only), so torch, CUDA and CUPTI start once.
    Each job answers with a line ``ARGUS-RESULT {"ok": ...}``; anything else on stdout is the
    kernels' own output.
    """
    for line in sys.stdin:
        try:
            handle(parser().parse_args(json.loads(line)))
            answer: dict[str, Any] = {"ok": True}
        except Exception as exc:  # report and keep serving: the runner decides what follows
            answer = {"ok": False, "error": repr(exc)[:2000]}
        print("ARGUS-RESULT " + json.dumps(answer), flush=True)


def main() -> None:
    ap = parser()
    a = ap.parse_args()
    if a.action == "serve":
        serve()
        return
    if not (a.source and a.config):
        ap.error(f"{a.action} needs --source and --config")
    handle(a)


def refuse_autotuned(mod: Any) -> None:
    """A harness kernel under ``@triton.autotune`` launches other binaries while it tunes, and
    this worker cannot tell them apart: ncu's launch count would land on any of them."""
    from triton.runtime.autotuner import Autotuner

    if isinstance(getattr(mod, mod.KERNEL, None), Autotuner):
        raise SystemExit(f"{mod.KERNEL} is an @triton.autotune kernel: the harness form cannot "
                         f"tell the chosen config's launches from the tuning ones. Observe the "
                         f"program that launches it with 'argus observe --region ... -- "
                         f"COMMAND' (the launcher pins the chosen config and checks the binary)")


def handle(a: argparse.Namespace) -> None:
    params, overrides = json.loads(a.params), json.loads(a.overrides)
    mod = load_module(Path(a.source), f"argus_subject_{next(_JOBS)}")
    refuse_autotuned(mod)
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


_ACTIVITY: list[Activity] = []


def cupti_timing(mod: Any, t: dict[str, Any], opts: dict[str, Any], out: Path,
                 params: dict[str, Any]) -> dict[str, Any]:
    if not _ACTIVITY:  # one CUPTI client per process, its callbacks registered once
        _ACTIVITY.append(Activity())
    act = _ACTIVITY[0]
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


def ncu_source(mod: Any, a: argparse.Namespace, params: dict[str, Any]) -> dict[str, Any]:
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
    cmd += [sys.executable, "-m", "argusdb.observe.runner.worker", "child", "--source", a.source,
            "--config", a.config, "--overrides", a.overrides, "--launches", "3"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    (a.out / "ncu.log").write_text(p.stdout + p.stderr)
    if p.returncode != 0:
        raise SystemExit(f"ncu failed: {(p.stdout + p.stderr)[-500:]}")
    files = []
    pages: list[tuple[str, str, list[str]]] = [("raw", "raw.csv", [])]
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


def proton_instr(mod: Any, opts: dict[str, Any], a: argparse.Namespace,
                 params: dict[str, Any]) -> dict[str, Any]:
    import triton.profiler as proton

    size = dict(params.get("proton_size") or getattr(mod, "PROTON_SIZE", {}))
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


def pcsampling(mod: Any, t: dict[str, Any], opts: dict[str, Any], out: Path,
               params: dict[str, Any]) -> dict[str, Any]:
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
