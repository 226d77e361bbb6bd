"""Where a collection runs: on the local GPU (live), or from recorded bundles (replay).

A backend gets one :class:`Job` (a collect or control task of a plan, with the program version
to run) and returns a :class:`Collected`: the artefacts, the GPU seconds it held the device, and
the result check of a variant against its parent. The runner ingests what comes back.

``LiveBackend`` runs the packaged worker (``python -m argusdb.observe.runner.worker``): launch
checks
and clean timings in one
resident process per plan, ncu and Proton collections in a process each (CUPTI, Proton and ncu
never share a process). ``ReplayBackend`` answers from a
folder recorded by ``tools/h200/record.py`` (``tests/data/gpu``): the same artefacts the live path
produced on the H200, named ``KERNEL.CONFIG.*``, so the whole path after collection runs on a
CPU.

Example:
    >>> execute(plan, store, source, workdir, progress=False,  # doctest: +SKIP
    ...         backend=ReplayBackend(Path("tests/data/gpu")))
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from argusdb import environment
from argusdb.collectors.regions import ProgramSource
from argusdb.errors import InputError
from argusdb.observe.gpu import has_gpu


@dataclass
class Job:
    """One collection (or the control task) to run.

    Attributes:
        action: the plan action (``cupti_timing``, ``ncu_source``, ``proton_instr``,
            ``proton_pcsampling``, ``find_launch``).
        source: the program version's source (a variant's transformed text).
        parent_source: the parent's source when ``source`` is a variant, for the result check.
        transform: the variant's transform, None for the parent.
        config: the harness configuration launched.
        overrides: launch-option overrides of the variant (``{"num_stages": 1}``).
        params: the task's params as planned.
        workdir: a fresh folder for the artefacts.
    """

    action: str
    source: ProgramSource
    parent_source: ProgramSource | None
    transform: str | None
    config: str
    overrides: dict[str, Any]
    params: dict[str, Any]
    workdir: Path


@dataclass
class Collected:
    """What a collection produced."""

    paths: list[Path]
    gpu_s: float | None = None
    rel_err_vs_parent: float | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    # The source that really ran, when it differs from the job's (a replayed recording of
    # another variant of the same parent); the runner then binds evidence to that version.
    ran_source: ProgramSource | None = None
    ran_transform: str | None = None
    # The rest of the collection when it is work on this machine's CPU alone (exporting a
    # report): it runs beside the next tasks, and the runner calls ``later`` for what it
    # collected before a task that depends on this one runs (and before the plan ends).
    later: Callable[[], Collected] | None = None


class Backend(Protocol):
    """Runs jobs; ``name`` goes into each task's config."""

    name: str

    def run(self, job: Job) -> Collected: ...


def _stem(job: Job) -> str:
    return f"{job.source.stem}.{job.config}"


class ReplayBackend:
    """Answers jobs from a folder of recordings made by ``tools/h200/record.py``."""

    name = "replay"

    def __init__(self, bundle: Path) -> None:
        self.bundle = Path(bundle)
        self._json: dict[str, Any] = {}

    def _doc(self, name: str) -> Any:
        if name not in self._json:
            path = self.bundle / name
            self._json[name] = json.loads(path.read_text()) if path.exists() else {}
        return self._json[name]

    def device_target(self) -> str | None:
        """The target of the device the bundle was recorded on (``env.json``'s capability)."""
        from argusdb.observe.planner.target import from_capability

        cap = self._doc("env.json").get("capability")
        return from_capability(".".join(str(c) for c in cap)) if cap else None

    def _need(self, job: Job, *names: str) -> list[Path]:
        paths = [self.bundle / n for n in names]
        missing = [p.name for p in paths if not p.exists()]
        if missing:
            raise InputError(str(self.bundle), f"no recording of {job.action} for "
                             f"{job.transform or 'the parent'} of {_stem(job)} "
                             f"(missing {', '.join(missing)})",
                             "record it with tools/h200/record.py on the GPU machine, or run live")
        return paths

    def run(self, job: Job) -> Collected:
        stem = _stem(job)
        if job.action == "find_launch":
            checks = [c for c in self._doc("timing.json").get("checks", [])
                      if (c["kernel"], c["config"]) == (job.source.stem, job.config)]
            if not checks:
                raise InputError(str(self.bundle), f"no recorded launch of {stem}",
                                 "record it with tools/h200/record.py")
            return Collected([], None, None, {"kernel": checks[0].get("name"),
                                              "rel_err_vs_torch": checks[0]["rel_err_vs_torch"]})
        if job.action == "cupti_timing":
            return self._timing(job, stem)
        if job.action == "ncu_source":
            return self._ncu(job, stem)
        if job.action == "proton_instr":
            return self._proton(job, stem)
        if job.action == "proton_pcsampling":
            return Collected(self._need(job, f"{stem}.pcs.hatchet"))
        raise InputError(job.action, "not a collection the runner knows",
                         "use cupti_timing, ncu_source, proton_instr or proton_pcsampling")

    def _timing(self, job: Job, stem: str) -> Collected:
        if job.transform is None:
            return Collected(self._need(job, f"{stem}.run1.cupti.jsonl"))
        if not job.transform.startswith("forced_wait:"):
            # recorded by argusdb/observe/runner/worker.py: its result.json beside the timing has
            # the check
            paths = self._need(job, f"{stem}.{job.transform}.cupti.jsonl")
            doc = self._doc(f"{stem}.{job.transform}.result.json")
            return Collected(paths, doc.get("gpu_s"), doc.get("rel_err_vs_parent"),
                             {"recorded": paths[0].name, "median_us": doc.get("median_us")})
        region = job.transform.rsplit("/", 1)[-1]
        name = f"{stem}.fw_{region}"
        probes = self._doc("probes.json").get("sequential_cold", {}).get("probes", [])
        probe = next((p for p in probes if p["stem"] == name), None)
        paths = self._need(job, f"{name}.cupti.jsonl")
        ran = self._ran(job, f"variants/{name}.py")
        return Collected(paths, sum(probe["phases"].values()) if probe else None,
                         probe["rel_err_vs_parent"] if probe else None,
                         {"recorded": paths[0].name}, ran,
                         probe["transform"] if probe and ran else None)

    def _ncu(self, job: Job, stem: str) -> Collected:
        doc = self._doc("ncu.json")
        recorded = set(doc.get("sections", []))
        asked = set(job.params.get("sections") or [])
        if not asked <= recorded:
            raise InputError(str(self.bundle), f"recorded ncu sections {sorted(recorded)} lack "
                             f"{sorted(asked - recorded)}", "record them, or run live")
        paths = self._need(job, f"{stem}.source.csv", f"{stem}.raw.csv")
        run: dict[str, Any] = next(
            (r for r in doc.get("runs", []) if r["kernel"] == job.source.stem), {})
        return Collected(paths, run.get("wall_s"), None,
                         {"pass_lines": run.get("pass_lines", [])})

    def _proton(self, job: Job, stem: str) -> Collected:
        paths = self._need(job, f"{stem}.instr.chrome_trace.gz")
        doc = self._doc("proton.json")
        rec: dict[str, Any] = next(
            (r for r in doc.get("instrumentation", []) if r["kernel"] == job.source.stem), {})
        ran = self._ran(job, f"variants/{stem}.proton_scopes.py")
        return Collected(paths, rec.get("first_launch_s"), None,
                         {"size": rec.get("size"), "rel_err_vs_torch": rec.get("rel_err_vs_torch")},
                         ran, rec.get("transform") if ran else None)

    def _ran(self, job: Job, name: str) -> ProgramSource | None:
        path = self.bundle / name
        if not path.exists():
            return None
        text = path.read_text()
        return None if text == job.source.text else ProgramSource(job.source.name, text)


class LiveBackend:
    """Runs jobs on this machine's GPU with the packaged worker
    (:mod:`argusdb.observe.runner.worker`).

    The launch check and clean timings (cupti-python only) go to one resident worker process
    (``worker.py serve``), started at the first such job and stopped by :meth:`close`: torch,
    CUDA and CUPTI then start once per plan. Nsight Compute, Proton instrumentation and PC
    sampling get a process of their own each, so two CUPTI clients never share one.
    ``ARGUS_GPU_SITE`` (a folder) is put first on the workers' ``PYTHONPATH``: where the GPU
    machine has cupti-python installed from wheels (``tools/h200/record.py`` puts it in /tmp).
    """

    name = "live"
    RESIDENT = frozenset({"find_launch", "cupti_timing"})

    def __init__(self, python: str | None = None, worker: Path | None = None,
                 resident: bool = True) -> None:
        self.python = python or sys.executable
        # The worker ships in the package: ``python -m argusdb.observe.runner.worker``. ``worker``
        # (a
        # script path) replaces it, e.g. a stand-in in tests.
        self.worker = worker
        self.resident = resident
        self.source_dir: Path | None = None
        self._proc: subprocess.Popen[str] | None = None
        if worker is not None and not worker.exists():
            raise InputError(str(worker), "the GPU worker script is missing",
                             "pass an existing worker script, or none to use the packaged one")

    def _cmd(self, *args: str) -> list[str]:
        if self.worker is not None:
            return [self.python, str(self.worker), *args]
        return [self.python, "-m", "argusdb.observe.runner.worker", *args]

    def _env(self) -> dict[str, str]:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        # The worker loads the version's text from its work folder: the kernel's own folder
        # goes on the path so its sibling imports resolve.
        parts = [environment.GPU_SITE.get() or "",
                 str(self.source_dir) if self.source_dir else "", env.get("PYTHONPATH", "")]
        env["PYTHONPATH"] = os.pathsep.join(p for p in parts if p)
        return env

    def _args(self, job: Job) -> list[str]:
        job.workdir.mkdir(parents=True, exist_ok=True)
        src = job.workdir / job.source.name
        src.write_text(job.source.text)
        args = [job.action, "--source", str(src), "--config", job.config, "--out",
                str(job.workdir), "--params", json.dumps(job.params), "--overrides",
                json.dumps(job.overrides)]
        if job.parent_source is not None:
            parent = job.workdir / "parent" / job.parent_source.name
            parent.parent.mkdir(exist_ok=True)
            parent.write_text(job.parent_source.text)
            args += ["--parent", str(parent)]
        return args

    def _serve(self, args: list[str], log: Path) -> tuple[bool, str]:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                self._cmd("serve"), stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=self._env())
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(args) + "\n")
        self._proc.stdin.flush()
        lines: list[str] = []
        for line in self._proc.stdout:
            if line.startswith("ARGUS-RESULT "):
                log.write_text("".join(lines))
                answer = json.loads(line.removeprefix("ARGUS-RESULT "))
                return bool(answer["ok"]), answer.get("error", "")
            lines.append(line)
        log.write_text("".join(lines))
        self._proc = None
        return False, "the resident worker exited: " + " | ".join(lines[-3:])

    def run(self, job: Job) -> Collected:
        args = self._args(job)
        log = job.workdir / "worker.log"
        t0 = time.monotonic()
        if self.resident and job.action in self.RESIDENT:
            ok, error = self._serve(args, log)
        else:
            p = subprocess.run(self._cmd(*args), capture_output=True,
                               text=True, env=self._env())
            log.write_text(p.stdout + p.stderr)
            ok = p.returncode == 0
            error = " | ".join((p.stderr or p.stdout).strip().splitlines()[-3:])
        wall = time.monotonic() - t0
        result = job.workdir / "result.json"
        if not ok or not result.exists():
            raise InputError(str(log), f"the GPU worker failed ({job.action}): {error}",
                             "see the log; fix the kernel or the setup")
        doc = json.loads(result.read_text())
        return Collected([job.workdir / f for f in doc.pop("files", [])],
                         doc.pop("gpu_s", wall), doc.pop("rel_err_vs_parent", None),
                         {**doc, "process_wall_s": wall})

    def close(self) -> None:
        """Stop the resident worker (the runner calls this when the plan is done)."""
        if self._proc is not None:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
            self._proc = None


def default_backend() -> Backend:
    """Replay from ``ARGUS_REPLAY`` when set, else the local GPU."""
    replay = environment.REPLAY.get()
    if replay:
        return ReplayBackend(Path(replay))
    if not has_gpu():
        raise InputError("observe", "no NVIDIA GPU here and no ARGUS_REPLAY folder",
                         "run on a GPU host, or set ARGUS_REPLAY to recorded bundles")
    return LiveBackend()
