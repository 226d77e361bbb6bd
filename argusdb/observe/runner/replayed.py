"""A command plan's collections on replays of the captured launch, or, where that cannot stand
in, on runs of the program (the fall-back, said in each task's result).

``ReplayedCommandBackend`` wraps :class:`~argusdb.observe.runner.command.CommandBackend`:

- the control task runs the program once (discovery, CUPTI activity of the whole run, the
  capture: :mod:`argusdb.observe.launch.capture`);
- ``cupti_timing`` with ``from_control`` reads the control run's timing file: the in-context
  duration of the program's launches (the launch whose inputs the capture copied kept apart);
- a task with ``replay`` runs in the replay worker (:mod:`argusdb.observe.runner.replay`):
  CUPTI timings and their variant checks in one resident worker process, Nsight Compute over
  a worker of its own (``ncu`` over a process that starts in seconds, not over the program),
  Proton instrumentation and PC sampling in a worker each (two CUPTI clients never share a
  process);
- where the capture was refused, or a replay fails (it compiled another binary, the module
  would not load alone), the task runs the program as with ``--no-replay`` and its result says
  why (``replay_fallback``).

Example:
    >>> backend = ReplayedCommandBackend(CommandBackend(["python3", "model.py"], Path.cwd()))
    >>> backend.name
    'command'
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from argusdb import environment
from argusdb.errors import CommandFailed, InputError
from argusdb.observe.runner.backends import Collected, Job
from argusdb.observe.runner.command import RESULT, CommandBackend, collected, every_warp
from argusdb.observe.runner.gpu_tools import ncu_path

#: Largest relative error of a variant against its parent that still counts as "the same
#: result" (the runner's TOLERANCE; recorded with each check).
TOLERANCE = 1e-5
#: Replay worker action of each plan action.
_ACTION = {"cupti_timing": "time", "ncu_source": "plain", "proton_instr": "proton",
           "proton_pcsampling": "pcsampling"}
#: The replay worker's command.
_WORKER = [sys.executable, "-m", "argusdb.observe.runner.replay"]


def first_evidence(timing: Path, kernel: str) -> float | None:
    """Print the in-context duration of ``kernel`` (median of its kept launches in the control
    run's timing file) as soon as the control run has it; returns it, in µs."""
    import statistics

    durs = []
    with open(timing) as fh:
        for line in fh:
            rec = json.loads(line)
            if rec.get("kind") == "CONCURRENT_KERNEL" and rec.get("name") == kernel:
                durs.append((rec["end"] - rec["start"]) / 1e3)
    if not durs:
        return None
    med = statistics.median(durs)
    print(f"argus: {kernel} in the program: median {med:.2f} us over {len(durs)} launches "
          "(in-context duration; the other collections follow on replays)", file=sys.stderr,
          flush=True)
    return med


class ReplayFailed(Exception):
    """The replay worker could not answer a job (the message says why)."""


class ReplayedCommandBackend:
    """See the module docstring."""

    name = "command"

    def __init__(self, command: CommandBackend,
                 tasks: list[dict[str, Any]] | None = None) -> None:
        self.command = command
        self._proc: subprocess.Popen[str] | None = None
        self._others: dict[str, subprocess.Popen[str]] = {}
        self._ncu_standby: tuple[subprocess.Popen[str], Path, list[str]] | None = None
        self._standby = Path(tempfile.mkdtemp(prefix="argus-replay-"))
        if tasks:
            self.start(tasks)

    def start(self, tasks: list[dict[str, Any]]) -> None:
        """Start the workers the plan's replayed tasks need, before the control run: each
        imports torch and Triton beside the program's run, then waits for its job."""
        replayed = {t["action"]: t for t in tasks if t.get("params", {}).get("replay")}
        actions = set(replayed)
        kernel = next((t["params"].get("kernel") for t in tasks
                       if t["action"] == "find_launch"), None)
        if "cupti_timing" in actions:
            self._proc = self._popen([*_WORKER, "serve"])
        for action in ("proton_instr", "proton_pcsampling"):
            if action in actions:
                self._others[action] = self._popen([*_WORKER, "serve", "--no-timing"])
        if "ncu_source" in actions and ncu_path() is not None and kernel:
            job_file = self._standby / "ncu_job.json"
            params = {**replayed["ncu_source"]["params"], "kernel": kernel}
            self._ncu_standby = (subprocess.Popen(
                [*self._ncu_prefix(params), *_WORKER, "wait", str(job_file)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=self._env()),
                job_file, self._ncu_prefix(params))

    def _popen(self, cmd: list[str]) -> subprocess.Popen[str]:
        return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, env=self._env())

    def _ncu_prefix(self, params: dict[str, Any] | None = None) -> list[str]:
        """ncu's arguments: the worker's first launch of the kernel, with the task's sections
        and metrics, into the standby folder's report."""
        return [ncu_path() or "ncu", "--clock-control", "none", "--launch-skip", "0",
                "--launch-count", "1", "--import-source", "yes", "-f", "-o",
                str(self._standby / "ncu"), *self._ncu_sections(params or {})]

    @staticmethod
    def _ncu_sections(params: dict[str, Any]) -> list[str]:
        out = ["--kernel-name", f"regex:^{params['kernel']}$"] if params.get("kernel") else []
        for s in params.get("sections") or []:
            out += ["--section", s]
        if params.get("metrics"):
            out += ["--metrics", ",".join(params["metrics"])]
        return out

    # -- dispatch -------------------------------------------------------------------------
    def run(self, job: Job) -> Collected:
        control = job.params.get("control") or {}
        if job.params.get("from_control"):
            got = self._from_control(job, control)
            if got is not None:
                return got
            return self._fallback(job, "the control run's timing could not be split by "
                                  "binary: " + "; ".join(
                                      (control.get("in_context_timing") or {}).get("errors")
                                      or ["no timing file"]))
        if not job.params.get("replay"):
            return self.command.run(job)
        cap = control.get("capture") or {}
        if not cap.get("ok"):
            why = cap.get("why") or "the control run captured no launch"
            if job.action == "cupti_timing" and job.transform is None:
                # the parent side of a derivation: the program's own timing stands in
                got = self._from_control(job, control)
                if got is not None:
                    got.detail["replay_fallback"] = f"{why}; the control run's in-context " \
                                                    "timing stands in"
                    return got
            return self._fallback(job, why)
        try:
            return self._replay(job, cap, control)
        except ReplayFailed as exc:
            return self._fallback(job, str(exc))

    def _fallback(self, job: Job, why: str) -> Collected:
        """Run the program for this job (as ``--no-replay``), saying why."""
        plain = replace(job, params={k: v for k, v in job.params.items()
                                     if k not in ("replay", "from_control")})
        got = self.command.run(plain)
        got.detail["replay_fallback"] = why
        doc_path = job.workdir / RESULT
        if doc_path.exists():
            doc = json.loads(doc_path.read_text())
            doc["replay_fallback"] = why
            doc_path.write_text(json.dumps(doc, indent=1, default=str))
        return got

    def _from_control(self, job: Job, control: dict[str, Any]) -> Collected | None:
        """The control run's in-context timing as this task's result; None when it has none
        usable (no timing file, or records that could not be matched to binaries)."""
        timing = control.get("in_context_timing") or {}
        files = [f for f in timing.get("files") or [] if f.startswith("timing.")]
        split = timing.get("timing") or {}
        if not files or timing.get("errors") or not split.get("kept"):
            return None
        job.workdir.mkdir(parents=True, exist_ok=True)
        for f in files:
            shutil.copy(Path(control["folder"]) / f, job.workdir / f)
        median = first_evidence(job.workdir / files[0], str(job.params.get("kernel")))
        doc = {"files": files, "gpu_s": 0.0, "binary": job.params.get("binary"),
               "in_context_median_us": median,
               "from_control": True, "pid": timing.get("pid"),
               "launches_of_binary": split.get("of_binary"),
               "launches_kept": split.get("kept"),
               "launches_apart": split.get("apart"),
               "capture_copied": split.get("capture_copied", 0)}
        (job.workdir / RESULT).write_text(json.dumps(doc, indent=1, default=str))
        return collected(job.workdir, doc)

    # -- replays --------------------------------------------------------------------------
    def _job_doc(self, job: Job, cap: dict[str, Any]) -> dict[str, Any]:
        doc: dict[str, Any] = {"action": _ACTION[job.action], "capture": cap["folder"],
                               "module_file": cap["module_file"],
                               "kernel": job.params["kernel"],
                               "out": str(job.workdir.resolve()),
                               "launches": int(job.params.get("launches", 20)),
                               "warmup": 1, "tolerance": TOLERANCE}
        if job.action == "proton_pcsampling":
            doc["launches"] = int(job.params.get("launches", 20))
        if job.transform is not None and job.parent_source is not None:
            if job.overrides:
                raise ReplayFailed(f"the variant changes launch options ({job.overrides}), "
                                   "which a replay of the captured launch keeps")
            var = job.workdir / "variant" / job.source.name
            var.parent.mkdir(parents=True, exist_ok=True)
            var.write_text(job.source.text)
            doc["variant"] = str(var.resolve())
        return doc

    def _env(self) -> dict[str, str]:
        root = str(Path(__file__).resolve().parents[3])  # the folder that holds argusdb/
        parts = [environment.GPU_SITE.get() or "", root, os.environ.get("PYTHONPATH", "")]
        return dict(os.environ, PYTHONUNBUFFERED="1",
                    PYTHONPATH=os.pathsep.join(p for p in parts if p))

    def _replay(self, job: Job, cap: dict[str, Any], control: dict[str, Any]) -> Collected:
        job.workdir.mkdir(parents=True, exist_ok=True)
        doc = self._job_doc(job, cap)
        path = job.workdir / "replay_job.json"
        path.write_text(json.dumps(doc, indent=1))
        cmd = list(_WORKER)
        t0 = time.monotonic()
        if job.action == "cupti_timing":
            self._proc = self._serve(self._proc, doc, job.workdir / "replay.log", timing=True)
        elif job.action == "ncu_source":
            return self._ncu(job, [*cmd, str(path)], t0)
        elif job.action in self._others:
            self._others[job.action] = self._serve(self._others.pop(job.action), doc,
                                                   job.workdir / "replay.log", timing=False)
        else:
            p = subprocess.run([*cmd, str(path)], capture_output=True, text=True,
                               env=self._env())
            (job.workdir / "replay.log").write_text(p.stdout + p.stderr)
            if p.returncode != 0:
                raise ReplayFailed(f"the replay worker failed ({job.action}): "
                                   + " | ".join((p.stderr or p.stdout).strip().splitlines()[-3:]))
        res = self._read(job)
        res["process_wall_s"] = time.monotonic() - t0
        if job.action == "proton_instr":
            traces = [f for f in res["files"] if f.endswith(".chrome_trace")]
            if not traces:
                raise CommandFailed("replay worker", "Proton wrote no scope events for the "
                                    "instrumented replay", f"see {job.workdir / 'replay.log'}")
            vb = res.get("instrumented_binary")
            every_warp(job.workdir / traces[0], {
                "variant_check": {"variant_binary": vb},
                "binaries": {vb: {"num_warps": control.get("num_warps")}}},
                "replay of the captured launch")
        return collected(job.workdir, res)

    def _read(self, job: Job) -> dict[str, Any]:
        path = job.workdir / RESULT
        if not path.exists():
            raise ReplayFailed(f"the replay worker wrote no result for {job.action}")
        res: dict[str, Any] = json.loads(path.read_text())
        return res

    def _serve(self, proc: subprocess.Popen[str] | None, doc: dict[str, Any], log: Path,
               timing: bool) -> subprocess.Popen[str]:
        """One job in a serving replay worker (started now when none is waiting); returns the
        worker to keep. A worker that failed the job is stopped."""
        if proc is None or proc.poll() is not None:
            proc = self._popen([*_WORKER, "serve", *([] if timing else ["--no-timing"])])
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(doc) + "\n")
        proc.stdin.flush()
        lines: list[str] = []
        for line in proc.stdout:
            if line.startswith("ARGUS-RESULT "):
                log.write_text("".join(lines))
                answer = json.loads(line.removeprefix("ARGUS-RESULT "))
                if not answer["ok"]:
                    proc.kill()
                    raise ReplayFailed(f"the replay worker failed: {answer.get('error')}")
                return proc
            lines.append(line)
        log.write_text("".join(lines))
        raise ReplayFailed("the replay worker exited: " + " | ".join(lines[-3:]))

    def _ncu(self, job: Job, target: list[str], t0: float) -> Collected:
        """Nsight Compute over the replay worker: its first launch of the kernel (the parent,
        on the restored inputs; the worker checks it is the measured binary)."""
        ncu = ncu_path()
        if ncu is None:
            raise InputError("ncu", "Nsight Compute is not on this machine",
                             "install Nsight Compute or put ncu on PATH")
        rep = self._standby / "ncu"
        standby, self._ncu_standby = self._ncu_standby, None
        if standby is not None:
            # started under ncu before the control run, waiting for this job
            proc, job_file, prefix = standby
            tmp = job_file.with_suffix(".tmp")
            tmp.write_text(json.dumps(self._job_doc(job, (job.params.get("control") or {})
                                                    ["capture"])))
            tmp.rename(job_file)
            out, _ = proc.communicate()
            rc = proc.returncode
        else:
            prefix = self._ncu_prefix(job.params)
            p = subprocess.run([*prefix, *target], capture_output=True, text=True,
                               env=self._env())
            out, rc = p.stdout + p.stderr, p.returncode
        log = out or ""
        (job.workdir / "replay.log").write_text(log)
        if rc != 0 or not Path(f"{rep}.ncu-rep").exists():
            raise ReplayFailed("ncu over the replay worker failed: "
                               + " | ".join(log.strip().splitlines()[-3:]))
        res = self._read(job)
        profiled = time.monotonic()
        finish = self.command.start_export(rep, job.workdir, job.params)
        passes = [ln for ln in log.splitlines() if "==PROF== Profiling" in ln and " pass" in ln]

        def later() -> Collected:
            waited = time.monotonic()
            files = finish()
            now = time.monotonic()
            doc = {"files": files, "gpu_s": profiled - t0, "binary": res["binary"],
                   "replayed": True, "pass_lines": passes, "cmd": " ".join([*prefix, *target]),
                   "capture_launch": res.get("capture_launch"),
                   # the export ran beside the next tasks; "waited": what was left of it
                   "stages_s": {"profile": round(profiled - t0, 3),
                                "export_to_settle": round(now - profiled, 3),
                                "waited": round(now - waited, 3)}}
            (job.workdir / RESULT).write_text(json.dumps(doc, indent=1, default=str))
            return collected(job.workdir, doc)

        # the export reads the report, not the GPU: the replayed timings run beside it
        return Collected([], later=later)

    def close(self) -> None:
        """Stop the replay workers (the runner calls this when the plan is done)."""
        procs = [p for p in (self._proc, *self._others.values()) if p is not None]
        if self._ncu_standby is not None:  # never given its job (a failure, a fall-back)
            self._ncu_standby[0].kill()
            procs.append(self._ncu_standby[0])
        for proc in procs:  # every worker is told first: they end side by side
            if proc.stdin is not None:
                proc.stdin.close()
        # all their results are in: a worker still tearing down torch and its CUDA context
        # after a moment is stopped (the driver frees what it held), not waited for
        end = time.monotonic() + 0.5
        for proc in procs:
            try:
                proc.wait(timeout=max(0.01, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._proc, self._others, self._ncu_standby = None, {}, None
        shutil.rmtree(self._standby, ignore_errors=True)
