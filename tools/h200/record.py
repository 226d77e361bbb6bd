#!/usr/bin/env python3
"""Record real GPU evidence for argusdb on one NVIDIA GPU (made for the H200 machine).

One driver for the whole batch, so a device session needs one call:

    python3 tools/h200/record.py all --out OUT_DIR --wheels .whl

``all`` installs the cupti-python wheels into /tmp (the machine has no registry), then runs each
step in its own process, because two CUPTI clients (cupti-python, Proton, ncu) must not share one:

- ``timing`` (cupti-python 13.0 activity API): ``*.cupti.jsonl`` of the parents, the matmul
  versions and the forced-wait variants; ``timing.json`` (checks, clean timings, tracing
  overhead), ``probes.json`` (the 8 forced-wait probes), ``*.sass``, ``*.ttgir``, variant sources;
- ``ncu`` (``ncu --clock-control none`` over ``child``): ``*.ncu-rep``, ``*.source.csv``,
  ``*.raw.csv``, ``*.ncu.log`` (passes), ``ncu.json``;
- ``proton`` (Triton's Proton): instrumentation traces of the ``proton_scopes`` variants, PC
  sampling, ``proton.json``;
- ``profiler-host`` (cupti-python 13.4 ``profiler_host``): ``profiler_host.json``, the passes
  each metric list needs on GH100.

After every step the output folder is packed into ``OUT_DIR/gpu_record.tar.gz``, so a run cut
short still returns what it recorded. ``--smoke`` runs ``timing`` on a CPU under
``TRITON_INTERPRET=1`` with tiny shapes and no CUPTI, to test the driver itself.
"""
from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KERNELS = Path(__file__).resolve().parents[2] / "argusdb" / "demo" / "kernels"
sys.path.insert(0, str(ROOT))

from argusdb.collectors.regions import ProgramSource  # noqa: E402
from argusdb.observe.runner.gpu_tools import (  # noqa: E402
    Activity,
    interpreter_index_shim,
    kernel_durations_us,
    load_module,
    ncu_path,
    save_asm,
)
from argusdb.observe.transforms import forced_wait, proton_scopes  # noqa: E402

# kernel -> harness file, default version (a CONFIGS key), its regions, and a small shape for
# Proton instrumentation (one event per warp and scope: the full shapes would overflow its buffers)
SPECS: dict[str, dict] = {
    "softmax": {"config": "default", "regions": ["load", "reduce", "store"],
                "proton_size": {"rows": 512}, "smoke_size": {"rows": 8, "cols": 64}},
    "matmul": {"config": "bk64_s3", "regions": ["mainloop", "epilogue"],
               "proton_size": {"n": 1024}, "smoke_size": {"n": 128}},
    "attention": {"config": "causal", "regions": ["load_q", "load_k", "qk", "softmax", "load_v",
                                                  "pv", "epilogue"],
                  "proton_size": {"batch": 1, "heads": 4, "n_ctx": 1024},
                  "smoke_size": {"batch": 1, "heads": 1, "n_ctx": 128, "head_dim": 32}},
}
EXTRA_CONFIGS = {"attention": {"full": {"CAUSAL": False, "BLOCK_M": 128, "BLOCK_N": 64,
                                        "num_warps": 8, "num_stages": 3}}}
SMOKE_CONFIGS = {"matmul": {"BM": 64, "BN": 64, "BK": 32}, "attention": {"BLOCK_M": 64,
                                                                           "BLOCK_N": 32}}
# the 8 forced-wait probes: (kernel, config, region)
PROBES = [("softmax", "default", "load"), ("matmul", "bk64_s3", "mainloop"),
          ("matmul", "bk32_s1", "mainloop"), ("matmul", "bn256_s3", "mainloop"),
          ("attention", "causal", "load_q"), ("attention", "causal", "load_k"),
          ("attention", "causal", "load_v"), ("attention", "full", "load_k")]
NCU_SECTIONS = ["SpeedOfLight", "LaunchStats", "Occupancy", "SourceCounters", "WarpStateStats"]
LAUNCHES = 50

SMOKE = False
DEVICE = "cuda"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def config_of(mod, kernel: str, config: str) -> dict:
    cfg = dict({**mod.CONFIGS, **EXTRA_CONFIGS.get(kernel, {})}[config])
    if SMOKE:
        cfg.update(SMOKE_CONFIGS.get(kernel, {}))
    return cfg


def sync() -> None:
    if DEVICE == "cuda":
        import torch
        torch.cuda.synchronize()


# ---------------------------------------------------------------- CUPTI activity (cupti-python)
class NoActivity:
    """Stand-in for CPU smoke runs: records nothing."""

    def start(self, kinds=()) -> None:
        pass

    def stop(self, path: Path | None) -> list[dict]:
        if path is not None:
            path.write_text("")
        return []


# ---------------------------------------------------------------- the timing step
class Bench:
    """Kernel modules, inputs and parent outputs, shared by all timing sub-steps."""

    def __init__(self, out: Path, act) -> None:
        self.out, self.act = out, act
        self.mods = {k: load_module(KERNELS / f"{k}.py", f"argus_parent_{k}") for k in SPECS}
        self.inputs: dict[tuple[str, int], dict] = {}
        self.parent_out: dict[tuple[str, str], object] = {}

    def setup(self, kernel: str, slot: int = 0) -> dict:
        key = (kernel, slot)
        if key not in self.inputs:
            size = SPECS[kernel]["smoke_size"] if SMOKE else {}
            self.inputs[key] = self.mods[kernel].setup(device=DEVICE, **size)
        return self.inputs[key]

    def parent(self, kernel: str, config: str):
        """Compile and check the parent version; its output is the variants' reference."""
        mod = self.mods[kernel]
        t = self.setup(kernel)
        cfg = config_of(mod, kernel, config)
        t0 = time.perf_counter()
        compiled = mod.launch(t, **cfg)
        sync()
        compile_s = time.perf_counter() - t0
        out = mod.result(t).clone()
        self.parent_out[(kernel, config)] = out
        err = mod.rel_err(out, mod.reference(t))
        info = save_asm(compiled, self.out, f"{kernel}.{config}")
        return compiled, {"kernel": kernel, "config": config, "rel_err_vs_torch": err,
                          "first_launch_s": compile_s, **info}

    def timed(self, launch, path: Path | None, n: int = LAUNCHES, warmup: int = 3) -> list[dict]:
        for _ in range(warmup):
            launch()
        sync()
        self.act.start()
        for _ in range(n):
            launch()
        return self.act.stop(path)


def step_overhead(b: Bench, rounds: int = 15, n: int = 100) -> dict:
    """Per-launch time of back-to-back softmax launches (CUDA events), tracing off vs on.

    Rounds interleave the modes (off, kernel-only tracing, kernel+runtime tracing) so that clock
    and thermal drift hit all of them alike; ``off_before_init`` rounds run before CUPTI is first
    enabled in the process.
    """
    import torch
    mod, t = b.mods["softmax"], b.setup("softmax")
    cfg = config_of(mod, "softmax", "default")

    def loop() -> float:
        for _ in range(5):
            mod.launch(t, **cfg)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(n):
            mod.launch(t, **cfg)
        e.record()
        e.synchronize()
        return s.elapsed_time(e) * 1e3 / n

    res: dict[str, list[float]] = {"off_before_init": [loop() for _ in range(rounds)]}
    modes = {"off": None, "kernel": ("CONCURRENT_KERNEL",),
             "kernel+runtime": ("CONCURRENT_KERNEL", "RUNTIME")}
    durs: dict[str, list[float]] = {m: [] for m in modes}
    for r in range(rounds):
        order = list(modes) if r % 2 == 0 else list(reversed(modes))
        for m in order:
            if modes[m]:
                b.act.start(modes[m])
            us = loop()
            if modes[m]:
                durs[m] += kernel_durations_us(b.act.stop(None), mod.KERNEL)
            res.setdefault(m, []).append(us)
    med = {m: statistics.median(v) for m, v in res.items()}
    return {"kernel": "softmax_fwd 16384x1024 fp32", "launches_per_round": n, "rounds": rounds,
            "per_launch_us": res, "median_us": med,
            "overhead_pct_vs_off": {m: 100 * (med[m] / med["off"] - 1) for m in med},
            "overhead_pct_vs_off_before_init": {m: 100 * (med[m] / med["off_before_init"] - 1)
                                                for m in med},
            "cupti_kernel_duration_median_us": {m: statistics.median(v) for m, v in durs.items()
                                                if v}}


def run_probe(b: Bench, kernel: str, config: str, region: str, tag: str, slot: int,
              compile_only: bool = False, record: bool = False) -> dict:
    """One forced-wait probe: transform, compile, check against the parent, time."""
    phases: dict[str, float] = {}
    t0 = time.perf_counter()
    src = ProgramSource.from_path(KERNELS / f"{kernel}.py")
    var = forced_wait(src, region)
    stem = f"{kernel}.{config}.fw_{region}"
    path = b.out / "variants" / f"{stem}.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(var.source.text)
    mod = load_module(path, f"argus_{tag}_{stem.replace('.', '_')}")
    phases["transform_s"] = time.perf_counter() - t0
    t = b.setup(kernel, slot)
    cfg = config_of(mod, kernel, config)
    t1 = time.perf_counter()
    compiled = mod.launch(t, **cfg)
    sync()
    phases["compile_first_launch_s"] = time.perf_counter() - t1
    res = {"kernel": kernel, "config": config, "region": region, "transform": var.transform,
           "module": mod, "compiled": compiled, "t": t, "cfg": cfg, "stem": stem}
    if compile_only:
        res["phases"] = phases
        return res
    return finish_probe(b, res, phases, record)


def finish_probe(b: Bench, res: dict, phases: dict, record: bool) -> dict:
    mod, t, cfg = res["module"], res["t"], res["cfg"]
    t2 = time.perf_counter()
    parent = b.parent_out[(res["kernel"], res["config"])]
    mod.launch(t, **cfg)
    sync()
    out = mod.result(t)
    err_parent = mod.rel_err(out, parent.double())
    phases["check_s"] = time.perf_counter() - t2
    t3 = time.perf_counter()
    path = b.out / f"{res['stem']}.cupti.jsonl" if record else None
    recs = b.timed(lambda: mod.launch(t, **cfg), path)
    phases["timing_s"] = time.perf_counter() - t3
    d = kernel_durations_us(recs, mod.KERNEL)
    info = save_asm(res["compiled"], b.out, res["stem"]) if record else {}
    return {k: res[k] for k in ("kernel", "config", "region", "transform", "stem")} | {
        "rel_err_vs_parent": err_parent, "phases": phases,
        "median_us": statistics.median(d) if d else None, "launches": len(d), **info}


def step_probes(b: Bench) -> dict:
    """The 8 forced-wait probes three ways: one by one on a cold Triton cache, batched (all
    variants compiled concurrently by a thread pool) on another cold cache, and batched again
    with fresh modules on the now warm cache (a repeated observe)."""
    out: dict = {}
    base = Path(os.environ.get("TMPDIR", "/tmp")) / "argus_triton_cache"
    for mode in ("sequential_cold", "batched_cold", "batched_warm_cache"):
        cache = base / ("seq" if mode == "sequential_cold" else "batch")
        if mode != "batched_warm_cache":
            shutil.rmtree(cache, ignore_errors=True)
        os.environ["TRITON_CACHE_DIR"] = str(cache)
        # recordings come from the one-by-one pass: it is the safest, and runs first
        record = mode == "sequential_cold"
        t0 = time.perf_counter()
        if mode == "sequential_cold":
            probes = [run_probe(b, k, c, r, f"{mode}{i}", i + 1, record=True)
                      for i, (k, c, r) in enumerate(PROBES)]
        else:
            # the interpreter patches triton.language globally: no threads in smoke runs
            workers = 1 if SMOKE else len(PROBES)
            try:
                with ThreadPoolExecutor(max_workers=workers) as pool:
                    futs = [pool.submit(run_probe, b, k, c, r, f"{mode}{i}", i + 1, True)
                            for i, (k, c, r) in enumerate(PROBES)]
                    compiled = [f.result() for f in futs]
            except Exception as exc:  # fall back to one thread, and say so
                out[f"{mode}_thread_error"] = repr(exc)[:500]
                log(f"threaded compile failed ({exc!r}); compiling one by one")
                compiled = [run_probe(b, k, c, r, f"{mode}x{i}", i + 1, True)
                            for i, (k, c, r) in enumerate(PROBES)]
            probes = [finish_probe(b, res, res.pop("phases"), record) for res in compiled]
        total = time.perf_counter() - t0
        out[mode] = {"total_s": total, "probes": probes, "triton_cache_dir": str(cache)}
        log(f"probes {mode}: {total:.2f} s")
        (b.out / "probes.json").write_text(json.dumps(out, indent=1, default=str))
    return out


def step_timing(out: Path) -> None:
    global DEVICE
    if SMOKE:
        os.environ["TRITON_INTERPRET"] = "1"
        DEVICE = "cpu"
        interpreter_index_shim()
    act = NoActivity() if SMOKE else Activity()
    b = Bench(out, act)
    summary: dict = {"checks": [], "timings": []}
    if not SMOKE:
        summary["overhead"] = step_overhead(b)
        log(f"overhead: {summary['overhead']['overhead_pct_vs_off']}")
    # parents: compile, check against torch, clean timing
    for kernel, config in [("softmax", "default"), ("attention", "causal"),
                           ("attention", "full"), ("matmul", "bk64_s3"), ("matmul", "bk32_s1"),
                           ("matmul", "bn256_s3")]:
        _, info = b.parent(kernel, config)
        summary["checks"].append(info)
        log(f"parent {kernel}.{config}: rel err {info['rel_err_vs_torch']:.3g}")
    mod = b.mods
    # clean timings; matmul versions for diffs, the default one twice to show the noise
    runs = [("softmax", "default", "run1"), ("attention", "causal", "run1"),
            ("attention", "full", "run1"), ("matmul", "bk64_s3", "run1"),
            ("matmul", "bk32_s1", "run1"), ("matmul", "bn256_s3", "run1"),
            ("matmul", "bk64_s3", "run2")]
    for kernel, config, run in runs:
        t = b.setup(kernel)
        cfg = config_of(mod[kernel], kernel, config)
        path = out / f"{kernel}.{config}.{run}.cupti.jsonl"
        recs = b.timed(lambda m=mod[kernel], t=t, cfg=cfg: m.launch(t, **cfg), path,
                       n=60 if kernel == "matmul" else LAUNCHES)
        d = kernel_durations_us(recs, mod[kernel].KERNEL)
        summary["timings"].append({"kernel": kernel, "config": config, "run": run,
                                   "file": path.name, "launches": len(d),
                                   "median_us": statistics.median(d) if d else None,
                                   "min_us": min(d) if d else None,
                                   "max_us": max(d) if d else None})
        log(f"timing {path.name}: {summary['timings'][-1]['median_us']}")
    (out / "timing.json").write_text(json.dumps(summary, indent=1, default=str))
    step_probes(b)



# ---------------------------------------------------------------- ncu (child = the profiled app)
def step_child(kernel: str, config: str, launches: int) -> None:
    mod = load_module(KERNELS / f"{kernel}.py", f"argus_child_{kernel}")
    t = mod.setup()
    cfg = config_of(mod, kernel, config)
    for _ in range(launches):
        mod.launch(t, **cfg)
    sync()


def step_ncu(out: Path) -> None:
    ncu = ncu_path()
    if ncu is None:
        log("ncu not found")
        return
    res = {"ncu": str(ncu), "version": subprocess.run([ncu, "--version"], capture_output=True,
                                                       text=True).stdout.strip(), "runs": []}
    for kernel in SPECS:
        config = SPECS[kernel]["config"]
        name = load_module(KERNELS / f"{kernel}.py", f"argus_ncu_{kernel}").KERNEL
        rep = out / f"{kernel}.{config}"
        cmd = [ncu, "--clock-control", "none", "-k", f"regex:^{name}$", "--launch-skip", "2",
               "--launch-count", "1", "--import-source", "yes", "-f", "-o", str(rep)]
        for s in NCU_SECTIONS:
            cmd += ["--section", s]
        cmd += [sys.executable, str(Path(__file__).resolve()), "child", "--kernel", kernel,
                "--config", config, "--launches", "4"]
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        (out / f"{kernel}.{config}.ncu.log").write_text(p.stdout + p.stderr)
        passes = [ln for ln in (p.stdout + p.stderr).splitlines()
                  if "==PROF== Profiling" in ln and " pass" in ln]
        csvs = {}
        for page, suffix in (("source", "source.csv"), ("raw", "raw.csv")):
            extra = ["--print-source", "cuda,sass"] if page == "source" else []
            q = subprocess.run([ncu, "-i", f"{rep}.ncu-rep", "--page", page, "--csv", *extra],
                               capture_output=True, text=True)
            (out / f"{kernel}.{config}.{suffix}").write_text(q.stdout)
            csvs[suffix] = len(q.stdout)
        res["runs"].append({"kernel": kernel, "config": config, "cmd": " ".join(cmd),
                            "rc": p.returncode, "wall_s": wall, "pass_lines": passes,
                            "csv_bytes": csvs})
        log(f"ncu {kernel}: rc {p.returncode}, {wall:.1f} s, {passes[-1:] }")
    res["sections"] = NCU_SECTIONS
    (out / "ncu.json").write_text(json.dumps(res, indent=1))


def ncu_section_dir() -> Path | None:
    """Nsight Compute's section files: they name the metrics each section collects."""
    ncu = ncu_path()
    if ncu is None:
        return None
    home = Path(ncu).resolve().parent
    dirs = [d for d in (home / "sections", home.parent / "sections") if d.is_dir()] + sorted(
        Path("/").glob("opt/nvidia/nsight-compute/*/sections")) + sorted(
        Path("/").glob("usr/local/cuda*/nsight-compute*/sections"))
    return dirs[0] if dirs else None


# ---------------------------------------------------------------- Proton
def step_proton(out: Path) -> None:
    import torch
    import triton.profiler as proton
    res: dict = {"instrumentation": [], "pcsampling": None}
    # PC sampling of the softmax parent first (its own session)
    try:
        mod = load_module(KERNELS / "softmax.py", "argus_pcs_softmax")
        t = mod.setup()
        mod.launch(t)
        torch.cuda.synchronize()
        proton.start(str(out / "softmax.default.pcs"), mode="pcsampling")
        with proton.scope("softmax"):
            for _ in range(20):
                mod.launch(t)
        torch.cuda.synchronize()
        proton.finalize()
        res["pcsampling"] = "ok"
    except Exception as exc:  # record and go on: the other traces do not depend on it
        res["pcsampling"] = repr(exc)[:500]
    for kernel, spec in SPECS.items():
        try:
            src = ProgramSource.from_path(KERNELS / f"{kernel}.py")
            var = proton_scopes(src, spec["regions"])
            path = out / "variants" / f"{kernel}.{spec['config']}.proton_scopes.py"
            path.parent.mkdir(exist_ok=True)
            path.write_text(var.source.text)
            mod = load_module(path, f"argus_proton_{kernel}")
            t = mod.setup(**spec["proton_size"])
            cfg = config_of(mod, kernel, spec["config"])
            stem = out / f"{kernel}.{spec['config']}.instr"
            proton.start(str(stem), backend="instrumentation", data="trace")
            t0 = time.perf_counter()
            mod.launch(t, **cfg)
            torch.cuda.synchronize()
            wall = time.perf_counter() - t0
            proton.finalize(output_format="chrome_trace")
            err = mod.rel_err(mod.result(t), mod.reference(t))
            res["instrumentation"].append({"kernel": kernel, "transform": var.transform,
                                           "size": spec["proton_size"], "rel_err_vs_torch": err,
                                           "first_launch_s": wall})
            log(f"proton {kernel}: rel err {err:.3g}")
        except Exception as exc:
            res["instrumentation"].append({"kernel": kernel, "error": repr(exc)[:800]})
            log(f"proton {kernel} failed: {exc!r}"[:300])
    res["files"] = sorted(p.name for p in out.iterdir() if "instr" in p.name or "pcs" in p.name)
    (out / "proton.json").write_text(json.dumps(res, indent=1))


# ---------------------------------------------------------------- profiler_host (cupti 13.4)
def _preload_cupti_134() -> str | None:
    # cupti-python finds libcupti through cuda-pathfinder, which prefers the image's own
    # nvidia-cuda-cupti 13.0 (no profiler_host entry points) over the carried 13.4 wheel; a
    # library already loaded under its soname wins, so load the carried one first.
    for entry in sys.path:
        lib = Path(entry) / "nvidia" / "cu13" / "lib"
        if (lib / "libcupti.so.13").exists():
            ctypes.CDLL(str(lib / "libnvperf_host.so"), mode=ctypes.RTLD_GLOBAL)
            ctypes.CDLL(str(lib / "libcupti.so.13"), mode=ctypes.RTLD_GLOBAL)
            return str(lib)
    return None


def step_profiler_host(out: Path, metrics_file: Path) -> None:
    libdir = _preload_cupti_134()
    from cupti import profiler_host as ph
    from cupti.cupti import MetricType, ProfilerType
    res: dict = {"libcupti_dir": libdir, "errors": {}}
    chip = "GH100"
    res["chip"] = chip

    def attempt(key: str, fn) -> None:
        try:
            res[key] = fn()
        except Exception as exc:  # keep what the other queries give
            res["errors"][key] = repr(exc)[:300]

    attempt("supported_chips", ph.get_supported_chips)
    attempt("single_pass_sets", lambda: {s: ph.get_metrics_in_single_pass_set(chip, s)
                                         for s in ph.get_single_pass_sets(chip)})
    attempt("max_hw_metrics_per_pass", lambda: {
        p.name: ph.get_max_num_hardware_metrics_per_pass(chip, p)
        for p in (ProfilerType.RANGE_PROFILER, ProfilerType.PM_SAMPLING)})
    host = ph.ProfilerHost(chip, ProfilerType.RANGE_PROFILER)
    host.initialize()
    res["base_metrics"] = {m.name: host.get_base_metrics(m)
                           for m in (MetricType.COUNTER, MetricType.RATIO, MetricType.THROUGHPUT)}
    host.deinitialize()

    def passes(metrics: list[str]) -> int | str:
        # a host object accumulates the metrics of every config image it made: one per query
        h = ph.ProfilerHost(chip, ProfilerType.RANGE_PROFILER)
        try:
            h.initialize()
            return ph.get_num_of_passes(h.create_config_image(metrics))
        except Exception as exc:
            return f"error: {exc!r}"[:200]
        finally:
            h.deinitialize()

    lists = json.loads(metrics_file.read_text())
    per_metric: dict[str, int | str] = {}
    t0 = time.perf_counter()
    for m in lists.pop("_all_raw_metrics", []):
        if time.perf_counter() - t0 > 120:  # keep the step short; the rest is listed as skipped
            per_metric[m] = "skipped: time cap"
            continue
        per_metric[m] = passes([m])
    res["passes_per_metric"] = per_metric
    valid = [m for m, p in per_metric.items() if isinstance(p, int)]
    res["passes_all_valid_raw_metrics"] = {"count": len(valid), "passes": passes(valid)}
    groups = {}
    secdir = ncu_section_dir()
    res["ncu_section_dir"] = str(secdir)
    used: set[str] = set()
    for f in sorted(secdir.glob("*.section")) if secdir else []:
        text = f.read_text()
        names = sorted(set(re.findall(r'Name:\s*"([a-z0-9_]+__[A-Za-z0-9_.]+)"', text)))
        ident = re.search(r'Identifier:\s*"([^"]+)"', text)
        key = ident.group(1) if ident else f.stem
        lists[f"section:{key}"] = names
        if key in NCU_SECTIONS:
            used.update(names)
    lists["sections_of_record_ncu"] = sorted(used)
    for name, metrics in lists.items():
        ok = [m for m in metrics if isinstance(passes([m]), int)]
        groups[name] = {"metrics": metrics, "valid": ok, "passes": passes(ok) if ok else 0}
    res["passes_per_list"] = groups
    (out / "profiler_host.json").write_text(json.dumps(res, indent=1))
    log(f"profiler_host: {len(per_metric)} metrics, lists "
        f"{ {k: v['passes'] for k, v in groups.items()} }"[:2000])


# ---------------------------------------------------------------- orchestration
def install(wheels: Path, name: str) -> Path:
    target = Path("/tmp") / f"site_{name}"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                    "--no-compile", "--no-cache-dir", "--upgrade", "--target", str(target),
                    *map(str, sorted((wheels / name).glob("*.whl")))], check=True)
    return target


def pack(out: Path, dst: Path) -> None:
    """Pack the output folder (large Nsight Compute reports left out: their CSVs are kept)."""
    tmp = dst.with_suffix(".tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        tar.add(out, arcname="gpu_record",
                filter=lambda ti: None if ti.name.endswith(".ncu-rep") and ti.size > 4e6 else ti)
    tmp.replace(dst)


def env_info(out: Path) -> None:
    import torch
    import triton
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,"
                          "clocks.sm,clocks.max.sm,clocks.mem", "--format=csv"],
                         capture_output=True, text=True).stdout
    info = {"python": sys.version, "torch": torch.__version__, "triton": triton.__version__,
            "cuda_runtime": torch.version.cuda, "device": torch.cuda.get_device_name(),
            "capability": torch.cuda.get_device_capability(), "nvidia_smi": smi,
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    (out / "env.json").write_text(json.dumps(info, indent=1))
    log(f"env: {info['device']} torch {info['torch']} triton {info['triton']}\n{smi}")


def step_all(out: Path, wheels: Path, steps: list[str], dst: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    site130 = install(wheels, "cupti130")
    site134 = install(wheels, "cupti134")
    env_info(out)
    me = [sys.executable, str(Path(__file__).resolve())]
    costs = {}
    plan = {"timing": (["timing"], site130), "ncu": (["ncu"], None),
            "proton": (["proton"], None),
            "profiler-host": (["profiler-host", "--metrics",
                               str(Path(__file__).resolve().parent / "metric_lists.json")],
                              site134)}
    for step in steps:
        args, site = plan[step]
        envv = dict(os.environ, PYTHONUNBUFFERED="1")
        if site is not None:
            envv["PYTHONPATH"] = f"{site}:{envv.get('PYTHONPATH', '')}"
        t0 = time.perf_counter()
        log(f"step {step} ...")
        p = subprocess.run([*me, *args, "--out", str(out)], env=envv)
        costs[step] = {"wall_s": time.perf_counter() - t0, "rc": p.returncode}
        log(f"step {step}: rc {p.returncode}, {costs[step]['wall_s']:.1f} s")
        (out / "steps.json").write_text(json.dumps(costs, indent=1))
        pack(out, dst)


def main() -> None:
    global SMOKE
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("step", choices=["all", "timing", "ncu", "proton", "profiler-host", "child"])
    ap.add_argument("--out", type=Path, default=Path("gpu_out"))
    ap.add_argument("--wheels", type=Path, default=ROOT / ".whl")
    ap.add_argument("--pack", type=Path, help="tar.gz written after each step (all)")
    ap.add_argument("--steps", default="timing,ncu,proton,profiler-host")
    ap.add_argument("--metrics", type=Path)
    ap.add_argument("--kernel")
    ap.add_argument("--config")
    ap.add_argument("--launches", type=int, default=4)
    ap.add_argument("--smoke", action="store_true", help="CPU run of the timing step")
    a = ap.parse_args()
    SMOKE = a.smoke
    if a.step == "child":
        step_child(a.kernel, a.config, a.launches)
        return
    a.out.mkdir(parents=True, exist_ok=True)
    if a.step == "all":
        step_all(a.out, a.wheels, a.steps.split(","), a.pack or a.out.parent / "gpu_record.tar.gz")
    elif a.step == "timing":
        step_timing(a.out)
    elif a.step == "ncu":
        step_ncu(a.out)
    elif a.step == "proton":
        step_proton(a.out)
    else:
        step_profiler_host(a.out, a.metrics)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
