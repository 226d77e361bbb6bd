"""Measuring candidates: on the GPU (CUPTI activity timing) or in the CPU dry mode.

GPU: a candidate is compiled by the JIT without launching (``JITFunction.warmup``; compile time
is recorded, not charged), its TTGIR/PTX/SASS saved (``nvdisasm -g -gi -c``), then, holding the
GPU lock (one measurement at a time across the kernel processes), two warm launches and
``launches`` timed launches under CUPTI activity tracing
(``argusdb.observe.runner.gpu_tools.Activity``,
kernel records written as ``*.cupti.jsonl``), then the result check against the fp64 torch
reference. The wall time under the lock is what the arm is charged. The timing and the TTGIR are
ingested as the candidate's version; the arm reads its duration back from the store.

Dry mode (``TRITON_INTERPRET=1``, tiny shapes, CPU): the same search, store and queries; the
kernel runs in Triton's interpreter, the static evidence comes from a real sm_90 compile with
Triton's bundled ptxas/nvdisasm, and a "duration" is the interpreter's wall time per launch
(no timing artefact exists, so nothing derived is stored and the probe answers no evidence).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from argusdb.collectors.regions import ProgramSource
from argusdb.observe.runner.gpu_tools import interpreter_index_shim, save_asm
from argusdb.observe.transforms.forced_wait import forced_wait
from experiments.ab import harness
from experiments.ab.evidence import EvidenceStore
from experiments.ab.optimizer import Evidence, Result

TARGET = "sm_90"


@contextlib.contextmanager
def gpu_lock(path: Path | None) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (no-op for None): one measurement at a time."""
    if path is None:
        yield
        return
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


class Bench:
    """Measures configurations of one kernel for one (arm, seed) lineage into one store."""

    def __init__(self, name: str, mod: ModuleType, store: EvidenceStore, work: Path, gpu: bool,
                 launches: int = 20, lock: Path | None = None) -> None:
        self.name, self.mod, self.store, self.work, self.gpu = name, mod, store, work, gpu
        self.launches, self.lock = launches, lock
        self.device = "cuda" if gpu else "cpu"
        self.tensors = mod.setup("full" if gpu else "tiny", self.device)
        self.ref = mod.reference(self.tensors)
        self.lineage: dict[str, str] = {}
        self.n = 0
        self.compiled: dict[str, tuple[harness.Launch, Any, float]] = {}
        self.activity: Any = None
        if gpu:
            from argusdb.observe.runner.gpu_tools import Activity
            self.activity = Activity()

    def options(self, cfg: harness.Config) -> dict[str, str]:
        return {**{k: str(v) for k, v in cfg.items()}, "target": TARGET, **self.lineage}

    def _err(self) -> float:
        out = self.mod.result(self.tensors).double()
        return float(((out - self.ref).norm() / self.ref.norm()).item())

    def _compile(self, mod: ModuleType, cfg: harness.Config, tag: str
                 ) -> tuple[harness.Launch, Any, float, list[Path]]:
        t0 = time.perf_counter()
        launch = harness.bind(mod, self.tensors, cfg)
        out = self.work / tag
        out.mkdir(parents=True, exist_ok=True)
        if self.gpu:
            info = save_asm(launch.compile(), out, tag)
        else:
            # The interpreter patches triton.language for good once it has run a kernel, so
            # the sm_90 compile happens in a process of its own (spawned without it).
            info = self._static_pool().apply(_compile_sm90_files,
                                             (str(mod.__file__), cfg, str(out), tag))
        comp = time.perf_counter() - t0
        return launch, None, comp, [out / f for f in info["files"]
                                    if f.endswith((".ttgir", ".sass"))]

    def _static_pool(self) -> Any:
        if getattr(self, "_pool", None) is None:
            import multiprocessing

            saved = os.environ.pop("TRITON_INTERPRET", None)
            try:
                self._pool = multiprocessing.get_context("spawn").Pool(1)
            finally:
                if saved is not None:
                    os.environ["TRITON_INTERPRET"] = saved
        return self._pool

    def _time(self, launch: harness.Launch, path: Path) -> tuple[float | None, float, float]:
        """(median duration ns or None, charged s, relative error)."""
        with gpu_lock(self.lock):
            t0 = time.perf_counter()
            if self.gpu:
                import torch
                launch()
                launch()
                torch.cuda.synchronize()
                self.activity.start()
                for _ in range(self.launches):
                    launch()
                recs = self.activity.stop(path)
                err = self._err()
                torch.cuda.synchronize()
                charged = time.perf_counter() - t0
                durs = sorted(r["end"] - r["start"] for r in recs
                              if r["kind"] == "CONCURRENT_KERNEL" and r["name"] == self.mod.KERNEL)
                return (float(durs[len(durs) // 2]) if durs else None), charged, err
            launch()
            wall = time.perf_counter() - t0
            err = self._err()
            return wall * 1e9, time.perf_counter() - t0, err

    def measure(self, cfg: harness.Config, parent: str | None, move: str | None) -> Result:
        self.n += 1
        tag = f"c{self.n:04d}"
        try:
            launch, _, comp, files = self._compile(self.mod, cfg, tag)
        except ValueError as exc:  # the shape cannot take this configuration
            return Result(False, None, 0.0, 0.0, None, note=f"infeasible: {exc}")
        except Exception as exc:  # a compile failure is a failed candidate
            return Result(False, None, 0.0, 0.0, None,
                          note=f"compile failed: {type(exc).__name__}: {str(exc)[:200]}")
        timing = self.work / tag / f"{tag}.cupti.jsonl"
        try:
            dur, charged, err = self._time(launch, timing)
        except Exception as exc:  # a launch failure is a failed candidate
            return Result(False, None, 0.0, comp, None,
                          note=f"launch failed: {type(exc).__name__}: {str(exc)[:200]}")
        ok = err <= self.mod.TOL and dur is not None
        paths = [p for p in files if p.suffix == ".ttgir"]
        if self.gpu:
            paths.insert(0, timing)
        try:
            version = self.store.ingest(paths, self.options(cfg), parent, move)
        except Exception as exc:  # an artefact the store refuses: no candidate
            return Result(False, None, charged, comp, None,
                          note=f"ingest refused: {type(exc).__name__}: {str(exc)[:200]}")
        self.static_files = getattr(self, "static_files", {})
        self.static_files[version] = [p for p in files if p.suffix == ".sass"]
        if self.gpu and dur is not None:
            stored = self.store.duration_ns(version, self.mod.KERNEL,
                                            self.store.last_runs.get(str(timing)))
            dur = stored if stored is not None else dur
        return Result(ok, dur, charged, comp, version, rel_err=err,
                      note="" if ok else f"result off: rel_err {err:.3g}",
                      run_id=self.store.last_runs.get(str(timing)))

    def evidence(self, version: str, cfg: harness.Config, duration_ns: float | None,
                 buy_probe: bool) -> tuple[Evidence, float, float]:
        sass = self.static_files.get(version, [])
        if sass:
            self.store.ingest(sass, self.options(cfg), None, None)
        ev = Evidence(static=self.store.static(version), duration_ns=duration_ns)
        if not buy_probe:
            return ev, 0.0, 0.0
        region = harness.load_region(self.mod, cfg)
        src = ProgramSource.from_path(self.store.program)
        var = forced_wait(src, f"{src.stem}/{self.mod.KERNEL}/{region}")
        self.n += 1
        tag = f"p{self.n:04d}"
        d = self.work / tag
        d.mkdir(parents=True, exist_ok=True)
        path = d / src.name
        path.write_text(var.source.text)
        vmod = harness.load(f"{self.name}_probe", path)
        try:
            launch, _, comp, files = self._compile(vmod, cfg, tag)
            timing = d / f"{tag}.cupti.jsonl"
            _, charged, err = self._time(launch, timing)
        except Exception:  # a failed probe is evidence not obtained
            return ev, 0.0, 0.0
        paths = [p for p in files if p.suffix == ".ttgir"]
        if self.gpu:
            paths.insert(0, timing)
        try:
            vver = self.store.ingest(paths, self.options(cfg), version, var.transform,
                                     var.source)
            self.store.check(vver, version, err, self.mod.TOL)
        except Exception:  # a probe the store refuses: evidence not obtained
            return ev, charged, comp
        ev.exposed = self.store.exposed(version, self.mod.KERNEL, region)
        return ev, charged, comp


def _compile_sm90_files(path: str, cfg: harness.Config, out: str, tag: str) -> dict[str, Any]:
    """In a process without the interpreter: compile ``cfg`` of the kernel file at ``path`` for
    sm_90 (tiny CPU tensors give the argument types) and save its TTGIR/PTX/SASS."""
    mod = harness.load(Path(path).stem, Path(path))
    launch = harness.bind(mod, mod.setup("tiny", "cpu"), cfg)
    return save_asm(harness.compile_sm90(launch), Path(out), tag)


def interpret_env() -> None:
    """The CPU dry mode: Triton's interpreter, with the numpy >= 2.4 index shim."""
    os.environ["TRITON_INTERPRET"] = "1"
    interpreter_index_shim()

