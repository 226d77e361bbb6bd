"""Collections of a user's command: run it unmodified under the launcher, or replay a recording.

``CommandBackend`` runs the command (in its own working directory and environment) once per task
with the launcher's hooks (:mod:`argusdb.observe.launch`): the control task discovers the target
kernel's launches and binaries (``discover``), a timing task records CUPTI activity (``time``),
a source-page task runs it under ``ncu`` limited to the one measured launch (``--kernel-name``,
``--launch-skip`` counted over the launches of that name once autotuning is pinned to the chosen
config, ``--launch-count 1``), an instrumentation task runs a ``proton_scopes`` variant with a
Proton session around its measured launch (``proton``). Every run checks, from the hooks' launch
record, that the launch measured is of the binary the control task chose; otherwise the task
fails and nothing of it is stored. ``CommandReplayBackend`` answers the same jobs from a folder
of task results recorded by ``CommandBackend`` on a GPU (``tests/data/gpu/programs/...``).

Example:
    >>> backend = CommandBackend(["python", "model.py"], Path.cwd())
    >>> backend.run(job).detail["binary"]["num_warps"]  # doctest: +SKIP
    4
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from argusdb.errors import CommandFailed, InputError
from argusdb.observe.launch import command_env, read_launches, write_spec
from argusdb.observe.launch.compiled import unseen_reason
from argusdb.observe.launch.first import FILE as FIRST_FILE
from argusdb.observe.launch.first import say as say_first
from argusdb.observe.launch.hooks import binary_field
from argusdb.observe.launch.inductor import inductor_env
from argusdb.observe.runner.backends import Collected, Job
from argusdb.observe.runner.gpu_tools import ncu_path

#: What the runner stores of a task's result document (``result.json`` in its folder).
RESULT = "result.json"


def _tail(text: str, n: int = 6) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:])


class CommandBackend:
    """Runs the user's command once per job with the launcher's hooks."""

    name = "command"

    def __init__(self, argv: list[str], cwd: Path, timeout_s: float | None = None) -> None:
        self.argv, self.cwd, self.timeout_s = list(argv), Path(cwd), timeout_s

    def _spec(self, job: Job, mode: str) -> dict[str, Any]:
        p = job.params
        spec: dict[str, Any] = {"kernel": p["kernel"], "program": p["program"],
                                "out": str(job.workdir.resolve()), "mode": mode,
                                "warmup": _warmup(p)}
        if p.get("rank") is not None:  # a torchrun program: the hooks in that rank only
            spec["rank"] = int(p["rank"])
        if job.action == "find_launch" and p.get("select"):
            spec["select"] = dict(p["select"])
        if job.action == "find_launch" and p.get("capture"):
            # one run for the program-level work: discovery, in-context timing, the capture
            spec["capture"] = dict(p["capture"])
            spec["time"] = bool(p.get("time"))
        if mode == "pcsampling":
            spec["sample_from"] = int(p.get("measure_index", 0))
            spec["sample_launches"] = int(p.get("launches", 20))
        if job.action != "find_launch":
            spec["pin"] = p.get("pin")
            if job.transform is None:  # a variant launches a binary of its own
                spec["binary"] = p.get("binary")
        if job.transform is not None and job.parent_source is not None:
            if job.source.text != job.parent_source.text:
                var = job.workdir / "variant" / job.source.name
                var.parent.mkdir(parents=True, exist_ok=True)
                var.write_text(job.source.text)
                spec["variant"] = str(var.resolve())
            spec["check_index"] = int(p.get("measure_index", 0))
        if job.overrides:
            spec["overrides"] = dict(job.overrides)
        return spec

    def _launch(self, job: Job, mode: str, prefix: list[str]) -> tuple[list[dict[str, Any]],
                                                                      float, str]:
        job.workdir.mkdir(parents=True, exist_ok=True)
        spec = write_spec(job.workdir / "spec.json", self._spec(job, mode))
        t0 = time.monotonic()
        # a control run with timing writes its first evidence while it runs: printed then
        first = (job.workdir / FIRST_FILE) if job.action == "find_launch" and p_time(job) \
            else None
        try:
            env = inductor_env(command_env(spec, os.environ), job.workdir)
            p = subprocess.Popen([*prefix, *self.argv], cwd=self.cwd, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=env)
        except FileNotFoundError as exc:
            raise CommandFailed(" ".join(self.argv), f"cannot be started ({exc.strerror})",
                                "check the command after '--' (the program and its path)"
                                ) from exc
        while True:
            left = None if self.timeout_s is None else self.timeout_s - (time.monotonic() - t0)
            try:
                stdout, stderr = p.communicate(timeout=0.2 if first is not None else left)
                break
            except subprocess.TimeoutExpired as exc:
                if first is not None and first.exists():
                    say_first(first)
                    first = None
                if left is not None and left <= 0.2:
                    p.kill()
                    p.communicate()
                    raise CommandFailed(" ".join(self.argv), f"ran past {self.timeout_s} s",
                                        "observe a shorter run of the program") from exc
        wall = time.monotonic() - t0
        log = stdout + stderr
        (job.workdir / "command.log").write_text(log)
        if p.returncode != 0:
            raise CommandFailed(" ".join(self.argv), f"exited with status {p.returncode} "
                                f"({job.action}): {_tail(stderr or stdout)}",
                                f"run the command alone until it succeeds; full output in "
                                f"{job.workdir / 'command.log'}")
        return read_launches(job.workdir), wall, log

    def _target(self, job: Job, docs: list[dict[str, Any]]) -> dict[str, Any]:
        """The process that launched the kernel (the task's ``rank``, else rank 0 / the first,
        when several did)."""
        kernel, program = job.params["kernel"], job.params["program"]
        launched = [d for d in docs if d.get("launches")]
        if not launched:
            # Hooks that failed to install matter only where nothing launched the kernel: a
            # profiler's own embedded Python (ncu's) inherits PYTHONPATH too and cannot load them.
            errors = [e for d in docs for e in d.get("errors", []) if "hooks not installed" in e]
            if errors and not any(d.get("module_file") for d in docs):
                raise CommandFailed(" ".join(self.argv), f"the launcher's hooks could not be "
                                    f"installed: {errors[0]}", "check that the command's "
                                    "Python imports triton and, for timing, cupti-python "
                                    "(ARGUS_GPU_SITE may name a folder that has it)")
            where = (f"{len(docs)} Python process(es) ran with the hooks and none launched "
                     f"it" if docs else "no Python process of the command loaded the hooks")
            compiled = unseen_reason(docs, kernel)
            if compiled:
                where += "; " + compiled
            where += ("; a subprocess started with an environment that drops PYTHONPATH (or "
                      "ARGUS_LAUNCH_SPEC) runs without them, so a kernel launched only there "
                      "is not seen: keep the environment when the program starts it")
            raise CommandFailed(" ".join(self.argv), f"never launched the @triton.jit function "
                                f"{kernel} of module {program}: {where}",
                                f"check the region id ({program}/{kernel}/...) and that the "
                                f"command reaches the kernel")
        want = str(job.params.get("rank", 0))
        launched.sort(key=lambda d: (d.get("rank") not in (None, want), d["pid"]))
        doc = launched[0]
        doc["processes_with_launches"] = [d["pid"] for d in launched]
        return doc

    def run(self, job: Job) -> Collected:
        if job.action == "find_launch":
            return self._discover(job)
        if job.action == "cupti_timing":
            return self._timing(job)
        if job.action == "ncu_source":
            return self._ncu(job)
        if job.action == "proton_instr":
            return self._proton(job)
        if job.action == "proton_pcsampling":
            return self._pcsampling(job)
        raise InputError(job.action, "not a collection of a command the runner knows",
                         "observe a command with duration, source-page signals or "
                         "exposed_latency; use the harness form for Proton collections")

    # -- control ----------------------------------------------------------------------
    def _discover(self, job: Job) -> Collected:
        docs, wall, _ = self._launch(job, "discover", [])
        doc = self._target(job, docs)
        if doc.get("chosen_binary") is None:
            select = job.params.get("select") or {}
            raise CommandFailed(" ".join(self.argv), f"launched no binary of "
                                f"{job.params['kernel']} that matches "
                                f"{', '.join(f'{k}={v}' for k, v in select.items())}; it "
                                f"launched {describe_binaries(program_binaries(doc))}",
                                "pick one of these with --option (or drop --option to measure "
                                "the binary of the program's last launch)")
        result = discovery(doc, int(job.params.get("launches_warmup", 0)),
                           job.params.get("select"))
        result["gpu_s"] = wall
        # where the control run's time went: the hooks' exit stages (timing file, SASS, capture)
        result["exit_stages_s"] = doc.get("exit_stages_s")
        mod = result.get("module_file")
        if mod and Path(mod).exists():
            import hashlib

            result["module_sha256"] = hashlib.sha256(Path(mod).read_bytes()).hexdigest()
        result["files"] = [f for f in doc.get("files", []) if f.endswith((".ttgir", ".sass"))]
        result["kept_files"] = doc.get("files", [])
        if "capture" in doc:
            result["capture"] = checked_capture(doc["capture"], result, job.workdir)
        if job.params.get("time"):
            result["in_context_timing"] = {
                "files": [f for f in doc.get("files", []) if f.startswith(("timing.", "apart."))],
                "timing": doc.get("timing"), "errors": doc.get("errors") or [],
                "pid": doc["pid"]}
        return self._result(job, result)

    def _timing(self, job: Job) -> Collected:
        docs, wall, _ = self._launch(job, "time", [])
        doc = self._target(job, docs)
        chosen = doc.get("chosen_binary")
        want = job.params.get("binary")
        if job.transform is None and want and chosen != want:
            raise CommandFailed(" ".join(self.argv), f"launched binary {chosen} of "
                                f"{job.params['kernel']} in this run, not {want} that the "
                                f"control task chose", "make the program's launches "
                                "deterministic (same shapes and configs every run)")
        self._no_errors(job, doc)
        timing = [f for f in doc.get("files", []) if f.startswith("timing.")]
        measured = [x for x in doc["launches"] if x["role"] == "program"
                    and x["binary"] == chosen]
        check = doc.get("variant_check")
        split = doc.get("timing") or {}  # counted on CUPTI's records: graph replays too
        of_binary = int(split.get("of_binary", len(measured)))
        kept = int(split.get("kept", max(0, len(measured) - _warmup(job.params))))
        if not kept:
            raise CommandFailed(" ".join(self.argv), f"launched binary {chosen} of "
                                f"{job.params['kernel']} {of_binary} time(s), none after "
                                f"the {_warmup(job.params)} warm-up launch(es)",
                                "run the program for more steps")
        # a variant's run also lists its binary's SASS: the probe's footprint in machine code
        listing = [f for f in doc.get("files", []) if f.startswith("variant.")
                   and f.endswith(".sass")] if job.transform is not None else []
        result: dict[str, Any] = {
            "files": timing + listing, "gpu_s": wall, "binary": chosen, "pid": doc["pid"],
            "launches_of_binary": of_binary, "launches_kept": kept,
            "graph_executions": int(split.get("graph_executions", 0)),
            "launches_apart": int(split.get("apart", len(doc["launches"]) - kept)),
            "variant_check": check}
        if check is not None:
            result["rel_err_vs_parent"] = check.get("rel_err_vs_parent")
        return self._result(job, result)

    def _no_errors(self, job: Job, doc: dict[str, Any]) -> None:
        """Fail the task with what the hooks recorded as going wrong in the run, if anything."""
        errors = doc.get("errors", [])
        if errors:
            raise CommandFailed(" ".join(self.argv), "; ".join(errors),
                                "see the launch record in " + str(job.workdir))

    def _proton(self, job: Job) -> Collected:
        """Proton's intra-kernel scope events of one launch of a ``proton_scopes`` variant:
        the checked launch (the control task's measured index) runs instrumented, and its
        result is compared with the parent's on the same inputs."""
        if job.transform is None or job.parent_source is None:
            raise InputError(job.action, "Proton instrumentation runs a proton_scopes variant",
                             "plan it from a region's duration")
        docs, wall, _ = self._launch(job, "proton", [])
        doc = self._target(job, docs)
        self._no_errors(job, doc)
        traces = [f for f in doc.get("files", []) if f.endswith(".chrome_trace")]
        if not traces:
            raise CommandFailed(" ".join(self.argv), "Proton wrote no scope events for the "
                                "instrumented launch", "see the launch record and command.log "
                                "in " + str(job.workdir))
        check = doc.get("variant_check") or {}
        every_warp(job.workdir / traces[0], doc, " ".join(self.argv))
        return self._result(job, {"files": traces, "gpu_s": wall, "pid": doc["pid"],
                                  "instrumented_binary": check.get("variant_binary"),
                                  "variant_check": check or None,
                                  "rel_err_vs_parent": check.get("rel_err_vs_parent")})

    def _pcsampling(self, job: Job) -> Collected:
        """Proton's PC sampling of the program's launches of the chosen binary, from the
        control task's measured launch on: per source line stall reasons and samples."""
        docs, wall, _ = self._launch(job, "pcsampling", [])
        doc = self._target(job, docs)
        self._no_errors(job, doc)
        sampled = {x["i"]: x["binary"] for x in doc["launches"]}
        got = [sampled[i] for i in doc.get("sampled") or []]
        want = job.params.get("binary")
        if not got or any(b != want for b in got):
            raise CommandFailed(" ".join(self.argv), f"the launches sampled were of binaries "
                                f"{sorted(set(got)) or 'none'}, not only {want} that the "
                                "control task chose", "make the program's launches "
                                "deterministic (same shapes and configs every run)")
        files = [f for f in doc.get("files", []) if f.endswith(".hatchet")]
        if not files:
            raise CommandFailed(" ".join(self.argv), "Proton wrote no PC samples",
                                "see command.log in " + str(job.workdir))
        return self._result(job, {"files": files, "gpu_s": wall, "pid": doc["pid"],
                                  "binary": want, "launches_sampled": len(got)})

    def _ncu(self, job: Job) -> Collected:
        ncu = ncu_path()
        if ncu is None:
            raise InputError("ncu", "Nsight Compute is not on this machine",
                             "install Nsight Compute or put ncu on PATH")
        kernel = job.params["kernel"]
        skip = int(job.params.get("ncu_launch_skip", 0))
        rep = job.workdir / "ncu"
        prefix = [ncu, "--clock-control", "none", "--kernel-name", f"regex:^{kernel}$",
                  "--launch-skip", str(skip), "--launch-count", "1", "--import-source", "yes",
                  "-f", "-o", str(rep)]
        for s in job.params.get("sections") or []:
            prefix += ["--section", s]
        if job.params.get("metrics"):
            prefix += ["--metrics", ",".join(job.params["metrics"])]
        docs, wall, log = self._launch(job, "plain", prefix)
        doc = self._target(job, docs)
        launches = executed(doc["launches"])
        want = job.params.get("binary")
        got = launches[skip]["binary"] if skip < len(launches) else None
        if got != want or (skip < len(launches) and launches[skip]["role"] != "program"):
            raise CommandFailed(" ".join(self.argv), f"the launch ncu profiled (launch {skip} "
                                f"of {kernel}) was of binary {got}, not {want}",
                                "make the program's launches deterministic")
        if "==PROF== Disconnected" not in log and not Path(f"{rep}.ncu-rep").exists():
            raise CommandFailed("ncu", f"profiled nothing: {_tail(log)}", "see command.log")
        files = self.export_ncu(rep, job.workdir, job.params)
        passes = [ln for ln in log.splitlines() if "==PROF== Profiling" in ln and " pass" in ln]
        return self._result(job, {"files": files, "gpu_s": wall, "binary": got,
                                  "ncu_launch_skip": skip, "pass_lines": passes,
                                  "cmd": " ".join([*prefix, *self.argv])})

    @staticmethod
    def export_ncu(rep: Path, workdir: Path, params: dict[str, Any]) -> list[str]:
        """Export the report ``rep.ncu-rep``: its raw page and, with the SourceCounters section,
        its source page (CUDA and SASS), as ``ncu.raw.csv`` / ``ncu.source.csv``."""
        return CommandBackend.start_export(rep, workdir, params)()

    @staticmethod
    def start_export(rep: Path, workdir: Path, params: dict[str, Any]
                     ) -> Callable[[], list[str]]:
        """Start the pages' exports of :meth:`export_ncu` (``ncu -i``: reads the report file,
        never the GPU) and return what waits for them and returns the files written. Each page
        is written straight into its file, so the exports need no reader while they run."""
        ncu = ncu_path() or "ncu"
        pages: list[tuple[str, str, list[str]]] = [("raw", "raw.csv", [])]
        if "SourceCounters" in (params.get("sections") or []):
            pages.insert(0, ("source", "source.csv", ["--print-source", "cuda,sass"]))
        # the pages export concurrently: each `ncu -i` spends most of its second starting
        procs = []
        for page, name, extra in pages:
            with open(workdir / f"ncu.{name}", "w") as out, \
                    open(workdir / f"ncu.{name}.err", "w") as err:
                procs.append((page, name, subprocess.Popen(
                    [ncu, "-i", f"{rep}.ncu-rep", "--page", page, "--csv", *extra],
                    stdout=out, stderr=err, text=True)))

        def finish() -> list[str]:
            files, failed = [], None
            for page, name, q in procs:
                q.wait()
                err = workdir / f"ncu.{name}.err"
                if q.returncode != 0 and failed is None:
                    failed = (page, err.read_text())
                err.unlink(missing_ok=True)
                files.append(f"ncu.{name}")
            if failed is not None:
                for f in files:
                    (workdir / f).unlink(missing_ok=True)
                raise CommandFailed("ncu", f"export of the {failed[0]} page failed: "
                                    f"{_tail(failed[1])}", "see the report in " + str(workdir))
            return files

        return finish

    @staticmethod
    def _result(job: Job, doc: dict[str, Any]) -> Collected:
        (job.workdir / RESULT).write_text(json.dumps(doc, indent=1, default=str))
        return collected(job.workdir, doc)


def checked_capture(cap: dict[str, Any], found: dict[str, Any], workdir: Path
                    ) -> dict[str, Any]:
    """The control run's capture as the runner uses it: ``ok`` only when it copied the very
    launch the control task measures (:func:`discovery`'s ``measured_launch``), with the folder
    and the kernel's module file; else ``ok`` False and ``why``."""
    out = dict(cap)
    if cap.get("ok") and cap.get("launch") != found.get("measured_launch"):
        out.update(ok=False, why=f"the capture copied launch {cap.get('launch')}, not the "
                   f"measured launch {found.get('measured_launch')}")
    if out.get("ok"):
        out["folder"] = str((workdir / str(cap.get("folder", "capture"))).resolve())
        out["module_file"] = found.get("module_file")
    return out


def p_time(job: Job) -> bool:
    """Whether the job's run records CUPTI activity from start to exit (a control run with
    ``time``)."""
    return bool(job.params.get("time"))


def _warmup(params: dict[str, Any]) -> int:
    """Launches of the binary not measured: the control run's choice (fewer when the program
    launches the kernel fewer times), else the plan's."""
    return int(params.get("measure_index", params.get("launches_warmup", 0)))


def recorded_warps(trace: Path) -> set[int]:
    """The warps of a Proton instrumentation trace's scope events (``tid`` ``"warp <w> ..."``),
    streamed."""
    import re

    from argusdb.collectors.chrome import iter_events

    out: set[int] = set()
    for _, ev in iter_events(trace, "Proton trace"):
        m = re.match(r"warp\s+(\d+)", str(ev.get("tid", "")))
        if m and ev.get("ph") == "X":
            out.add(int(m.group(1)))
    return out


def every_warp(trace: Path, launch: dict[str, Any], command: str) -> None:
    """Refuse a Proton instrumentation trace in which fewer warps entered the scopes than the
    instrumented binary has (``launch``: the run's launch record, whose ``variant_check``
    names the binary). In a warp-specialized kernel (``tl.range(..., warp_specialize=True)``)
    Triton moves the loop into partitions with warps of their own, and scopes around the
    region record only the default partition's warps: on the H200 a GEMM main loop of 12 warps
    came back as 46 cycles from warps 0-3.

    Raises:
        CommandFailed: some of the binary's warps recorded no scope event.
    """
    check = launch.get("variant_check") or {}
    binary = launch.get("binaries", {}).get(check.get("variant_binary"), {})
    if not binary.get("num_warps"):
        return
    warps = recorded_warps(trace)
    if len(warps) < int(binary["num_warps"]):
        raise CommandFailed(
            command, f"Proton recorded scope events of {len(warps)} of the instrumented "
            f"binary's {binary['num_warps']} warps (warps {_ranges(sorted(warps))}): the others "
            "never entered the scopes. In a warp-specialized kernel (tl.range(..., "
            "warp_specialize=True)) Triton moves the loop into partitions with warps of their "
            "own, and the scopes around the region time only the default partition, not the "
            "region's work, so no region duration is stored", "observe the region's stall "
            "samples and instructions (warp_stall_samples, inst_executed) or the kernel's "
            "duration instead")


def _ranges(values: list[int]) -> str:
    """``0-3, 8`` of ``[0, 1, 2, 3, 8]``."""
    parts: list[str] = []
    for v in values:
        if parts and v == int(parts[-1].split("-")[-1]) + 1:
            parts[-1] = f"{parts[-1].split('-')[0]}-{v}"
        else:
            parts.append(str(v))
    return ", ".join(parts)


def collected(folder: Path, doc: dict[str, Any]) -> Collected:
    """The runner's view of a task result document."""
    doc = dict(doc)
    files = [folder / f for f in doc.pop("files", [])]
    return Collected(files, doc.pop("gpu_s", None), doc.pop("rel_err_vs_parent", None), doc)


def program_binaries(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The binaries the program (not the autotuner) launched, in the order of their first
    launch: hash, launch count and what tells them apart (num_warps, num_stages, constexprs,
    argument specializations)."""
    counts: dict[str, int] = {}
    for x in doc["launches"]:
        if x["role"] == "program":
            counts[x["binary"]] = counts.get(x["binary"], 0) + 1
    out = []
    for h, n in counts.items():
        b = doc["binaries"].get(h, {})
        out.append({"hash": h, "launches": n, "num_warps": b.get("num_warps"),
                    "num_stages": b.get("num_stages"), "constexprs": b.get("constexprs") or {},
                    "args": b.get("args") or {}})
    return out


def describe_binaries(binaries: list[dict[str, Any]]) -> str:
    """``2 binaries: binary=1a2b3c4d num_warps=4 ... constexpr.BLOCK=1024 (13 launches); ...``:
    each with the ``--option`` values that select it (the keys where the binaries differ, among
    num_warps, num_stages, constexprs and argument specializations ``arg.NAME=i32:div16``, and
    always a hash prefix)."""
    consts = sorted({f"constexpr.{k}" for b in binaries for k in b["constexprs"]})
    args = sorted({f"arg.{k}" for b in binaries for k in b.get("args") or {}})
    keys = ["num_warps", "num_stages", *consts, *args]

    differ = [k for k in keys if len({str(binary_field(b, k)) for b in binaries}) > 1]
    parts = [" ".join([f"binary={b['hash'][:12]}"] + [f"{k}={binary_field(b, k)}"
                                                       for k in differ])
             + f" ({b['launches']} launch{'es' if b['launches'] != 1 else ''})"
             for b in binaries]
    return f"{len(binaries)} binar{'ies' if len(binaries) != 1 else 'y'}: " + "; ".join(parts)


def executed(launches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The launches that ran when they were made, in order: not those made while a CUDA
    graph was captured (they run as the graph's nodes at each replay, after them). Nsight
    Compute's ``--launch-skip`` counts these first."""
    return [x for x in launches if not x.get("captured")]


def discovery(doc: dict[str, Any], warmup: int, select: dict[str, str] | None = None
              ) -> dict[str, Any]:
    """Which launch to measure, of which binary, from a discover run's launch record.

    The binary is the one of the program's last launch of the kernel (after autotuning has
    settled), or with ``select`` the last that matches it (the hooks chose it); the measured
    launch is its ``warmup``-th launch outside autotuning (or its last, when it ran fewer
    times). ``ncu_launch_skip`` counts the launches of that name before it in a run whose
    autotuner is pinned to the chosen config (no benchmarking launches). ``program_binaries``
    lists every binary the program launched, and ``selected_by`` says how this one was picked.
    """
    prog = [x for x in doc["launches"] if x["role"] == "program"]
    chosen = doc["chosen_binary"]
    first = next((x["i"] for x in prog if x.get("captured")), None)
    # before the first capture: no graph replay has run yet, so --launch-skip counts exactly
    of_binary = [x for x in executed(prog) if x["binary"] == chosen
                 and (first is None or x["i"] < first)]
    if not of_binary:
        raise CommandFailed(
            " ".join(map(str, doc.get("argv") or [])), f"{doc['kernel']} binary {chosen} was "
            "not launched on its own before the program captured it into a CUDA graph: the "
            "launch to measure and the variant check need such a launch", "launch the kernel "
            "once or more before capturing (the usual warm-up on a side stream), or observe "
            "it in a run without graphs")
    index = min(warmup, len(of_binary) - 1)
    target = of_binary[index]
    skip = next(i for i, x in enumerate(executed(prog)) if x is target)
    chosen_cfg = doc.get("autotune", {}).get("chosen") or []
    return {"kernel": doc["kernel"], "module_file": doc.get("module_file"),
            "binary": doc["binaries"][chosen], "binaries": doc["binaries"],
            "launches": {"total": len(doc["launches"]), "program": len(prog),
                         "captured": sum(1 for x in prog if x.get("captured")),
                         "autotune": sum(1 for x in doc["launches"] if x["role"] == "autotune"),
                         "of_binary": len(of_binary)},
            "measure_index": index, "ncu_launch_skip": skip, "measured_launch": target["i"],
            "autotune": doc.get("autotune"),
            "pin": chosen_cfg[0] if len(chosen_cfg) == 1 else None,
            "pid": doc["pid"], "processes_with_launches": doc.get("processes_with_launches"),
            "warmup_used": index, "program_binaries": program_binaries(doc),
            "selected_by": ("--option " + " ".join(f"{k}={v}" for k, v in select.items())
                            if select else "the program's last launch of the kernel")}


class CommandReplayBackend:
    """Answers a command plan's jobs from task folders recorded by :class:`CommandBackend`.

    ``bundle/<task>/result.json`` (task = the plan's task name, e.g. ``cupti_timing.parent``)
    with the files it lists; they are copied into the job's folder and read as if collected.
    """

    name = "replay"

    def __init__(self, bundle: Path) -> None:
        self.bundle = Path(bundle)

    #: Tasks a replay plan adds, answered from the recording of the per-run path's task that
    #: collects the same (the bundle's files say how they were collected: a replay's timing
    #: file carries its LAUNCH_REPLAY record, a per-run one does not).
    RECORDED_AS: ClassVar[dict[str, str]] = {"cupti_timing.parent_replay": "cupti_timing.parent"}

    def run(self, job: Job) -> Collected:
        src = self.bundle / job.workdir.name
        if not (src / RESULT).exists() and job.workdir.name in self.RECORDED_AS:
            src = self.bundle / self.RECORDED_AS[job.workdir.name]
        doc_path = src / RESULT
        if not doc_path.exists():
            raise InputError(str(self.bundle), f"no recording of task {job.workdir.name} "
                             f"({job.action})", "record the plan on a GPU (tools/h200/), or "
                             "run live")
        ran = src / "variant" / job.source.name
        if job.transform is not None and ran.exists() and ran.read_text() != job.source.text:
            raise InputError(str(src), f"the recording of task {job.workdir.name} ran another "
                             f"variant than the planned {job.transform} (its variant source "
                             "differs)", "record this request on a GPU (tools/h200/)")
        job.workdir.mkdir(parents=True, exist_ok=True)
        doc = json.loads(doc_path.read_text())
        for f in doc.get("files", []):
            shutil.copy(src / f, job.workdir / f)
        if job.action == "proton_instr":  # the live backend's check, on the recorded run
            launch = [d for d in read_launches(src) if d.get("launches")]
            traces = [f for f in doc.get("files", []) if ".chrome_trace" in f]
            if launch and traces:
                every_warp(job.workdir / traces[0], launch[0], f"replay of {src}")
        return collected(job.workdir, doc)
