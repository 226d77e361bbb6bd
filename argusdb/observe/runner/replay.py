"""The replay worker: collections of a captured launch, without running the user's program.

The control run of a command plan captures the measured launch (:mod:`argusdb.observe.launch.
capture`). Everything that needs the kernel but not the program then runs here, on replays of
that launch, in a process that starts in seconds:

    python -m argusdb.observe.runner.replay JOB.json     # one job
    python -m argusdb.observe.runner.replay serve        # jobs from stdin, one process
    python -m argusdb.observe.runner.replay wait JOB.json  # one job, once the file appears

``serve`` and ``wait`` import torch, Triton (and, for timing, cupti-python) first and only then
wait, so a runner can start them while the program runs and hand them their jobs once the
capture is written: the seconds a Python process with torch takes to start are spent beside
the program's run, not after it. ``wait`` is the form Nsight Compute runs (it profiles the
worker's first launch of the kernel, after the job has come).

A job (JSON) names the ``capture`` folder, the kernel's ``module_file`` and ``kernel``, an
``action`` and the task folder ``out``:

- ``time``: CUPTI activity timing of ``warmup + launches`` replays of the parent binary, or of
  a ``variant`` (a transformed copy of the module, compiled with the same constexprs and
  options: the captured launch's arguments), checked first against the parent's outputs on the
  same inputs;
- ``plain``: one replay and nothing else (``ncu`` runs the worker for this);
- ``proton``: one replay of a ``proton_scopes`` variant inside a Proton instrumentation
  session, checked against the parent;
- ``pcsampling``: Proton PC sampling of ``launches`` replays of the parent.

Before every replay the captured bytes are copied back into each argument's storage, as
Nsight Compute restores memory between its passes, and ``time`` then flushes the L2 cache
(as ``triton.testing.do_bench`` does), so every timed launch starts from the same memory and a
cold L2. The replayed parent must compile to the measured binary (its hash is compared); a
replay is not the program's launch (other caches, no neighbouring kernels), so its timing
file ends with a ``LAUNCH_REPLAY`` record and is stored with the ``launch_replay`` standing of
its own, never pooled with in-context timing.

Each job writes ``OUT/result.json``: ``files``, ``gpu_s``, ``binary``, ``rel_err_vs_parent``
(a variant), ``tolerance`` and the check.

Example:
    >>> job = {"action": "plain", "capture": "find_launch/capture", "kernel": "k",
    ...        "module_file": "ops.py", "out": "ncu_source"}  # doctest: +SKIP
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

#: The process's CUPTI activity session (started and stopped per timing job).
_ACTIVITY: Any = None
#: Bytes written between timed replays to push the inputs out of L2 (H200: 60 MB of L2).
FLUSH_BYTES = 256 << 20


def load_kernel(path: str, kernel: str, name: str) -> Any:
    """The JIT function ``kernel`` of the module file ``path``, loaded without running the
    module's other top-level code: its imports, assignments, function and class definitions
    and ``_argus`` preludes run (compiled from the file at their own lines, so Triton reads
    the kernels' source and line numbers from it); calls, loops and ``if`` blocks do not, so a
    script that defines its kernel and then runs is not run."""
    import ast
    import types

    from argusdb.observe.launch.variant_load import _jit_function, _variant_statement

    tree = ast.parse(Path(path).read_text(encoding="utf-8"), path)
    keep = (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.FunctionDef,
            ast.ClassDef)
    tree.body = [n for n in tree.body if isinstance(n, keep) or _variant_statement(n)]
    mod = types.ModuleType(name)
    mod.__file__ = path
    sys.modules[name] = mod
    folder = str(Path(path).parent)
    if folder not in sys.path:  # the module's sibling imports
        sys.path.insert(0, folder)
    exec(compile(tree, path, "exec"), mod.__dict__)
    fn = _jit_function(mod, kernel)
    if fn is None:
        raise LookupError(f"{path} defines no @triton.jit function {kernel}")
    return fn


class Replayer:
    """One capture on the device, and launches of the parent or a variant on it."""

    def __init__(self, job: dict[str, Any]) -> None:
        import torch

        from argusdb.observe.launch import capture

        self.torch = torch
        self.cap = capture.load(Path(job["capture"]))
        ptxas = (self.cap.doc.get("binary_info") or {}).get("ptxas")
        if ptxas and Path(ptxas).exists():
            # torch.compile's binary was assembled by torch's ptxas (Inductor sets it): the
            # replay's parent and variants are assembled by the same one
            import os

            os.environ["TRITON_PTXAS_PATH"] = str(ptxas)
        self.cap_folder = str(job["capture"])
        self.module_file = str(job["module_file"])
        self.stand_in: dict[str, Any] | None = None
        self.doc = self.cap.doc
        self.kernel = str(job["kernel"])
        self.parent = load_kernel(job["module_file"], self.kernel, "argus_replayed_parent")
        self.cuda = any(b.is_cuda for b in self.cap.buffers)
        self.variant_kernel: Any = None
        self.flush = (torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
                      if self.cuda else None)
        if self.cuda:
            import triton

            triton.set_allocator(lambda size, align, stream: torch.empty(
                size, dtype=torch.int8, device="cuda"))

    def launch(self, fn: Any, flush: bool = False) -> Any:
        """Restore the captured bytes (and flush L2), then launch ``fn`` as captured."""
        self.cap.restore()
        if flush and self.flush is not None:
            self.flush.zero_()
        return fn.run(*self.cap.args, grid=self.cap.grid, warmup=False, **self.cap.kwargs)

    def outputs(self) -> list[Any]:
        """Copies of every tensor argument after a launch (for a comparison)."""
        return [a.clone() if isinstance(a, self.torch.Tensor) else a for a in self.cap.args]

    def parent_binary(self) -> str:
        """Launch the parent once; refuse when it is not the measured binary."""
        from argusdb.observe.launch.binary import binary_hash

        kernel = self.launch(self.parent)
        got = binary_hash(kernel)
        want = self.doc.get("binary")
        interpreted = got == "interpreter"
        if not interpreted and got != want and self.compiled_stand_in(kernel, str(want)):
            return str(want)
        if not interpreted and got != want:
            raise RuntimeError(f"the replayed launch of {self.kernel} ran binary {got}, not "
                               f"{want} that the program launched: the module file or the "
                               "toolchain differs from the program's")
        return str(want if interpreted else got)

    def compiled_stand_in(self, kernel: Any, want: str) -> bool:
        """Whether the replayed parent stands in for a binary torch.compile launched.

        Inductor compiled the program's binary from its copy of the user's source, at other
        lines of another file, so Triton's hash (which includes the function's first line)
        differs from that of the same text compiled from the user's file with the same
        constexprs and options. The two stand for one another where their PTX is the same
        once the source locations are left out (the capture holds the program's PTX); the
        replay's own binary then has the user's locations. Recorded in ``stand_in``; a
        difference refuses, naming the first line that differs."""
        from argusdb.observe.launch.binary import binary_hash
        from argusdb.observe.launch.inductor import ptx_difference

        info = self.doc.get("binary_info") or {}
        ptx_file = Path(self.cap_folder) / "binary.ptx"
        if info.get("launcher") != "inductor" or not ptx_file.exists():
            return False
        asm = getattr(kernel, "asm", None) or {}
        diff = ptx_difference(ptx_file.read_text(), asm.get("ptx", ""))
        if diff is not None:
            raise RuntimeError(f"the replayed launch of {self.kernel} compiled from "
                               f"{self.module_file} ran binary {binary_hash(kernel)}, whose "
                               f"code differs from binary {want} that torch.compile launched "
                               f"(compiled from {info.get('compiled_from')}): {diff}")
        self.stand_in = {"binary": binary_hash(kernel), "for": want,
                         "compiled_from": info.get("compiled_from"),
                         "ptx": "equal without source locations"}
        return True

    def check(self, variant: Any) -> dict[str, Any]:
        """The variant against the parent, each launched on the restored inputs."""
        from argusdb.observe.launch.binary import binary_hash
        from argusdb.observe.launch.check import compare

        self.cap.restore()
        before = self.outputs()
        self.launch(self.parent)
        parent = self.outputs()
        vk = self.launch(variant)
        res = compare(self.cap.args, parent, before)
        res["variant_binary"] = binary_hash(vk)
        self.variant_kernel = vk
        self.sync()
        return res

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()


def _variant(job: dict[str, Any]) -> Any:
    return load_kernel(job["variant"], job["kernel"], f"argus_replayed_{job['tag']}")


def run_job(job: dict[str, Any], cache: dict[str, Replayer]) -> dict[str, Any]:
    """Run one job (see the module docstring); returns the result document it wrote."""
    out = Path(job["out"])
    out.mkdir(parents=True, exist_ok=True)
    key = str(Path(job["capture"]).resolve())
    t0 = time.monotonic()
    stages: dict[str, float] = {}

    def took(stage: str, since: float) -> float:
        now = time.monotonic()
        stages[stage] = round(now - since, 4)
        return now

    rep = cache.get(key)
    if rep is None:
        rep = cache[key] = Replayer(job)
    mark = took("capture_load", t0)
    pcs = None
    if job["action"] == "pcsampling":
        # open before the module's first launch loads it, or samples have no source lines
        from argusdb.observe.launch.proton_hooks import PcSampling

        pcs = PcSampling(out, rep.kernel, 0, int(job.get("launches", 20)))
        pcs.open()
    binary = rep.parent_binary()
    mark = took("parent", mark)
    job.setdefault("tag", out.name.replace(".", "_"))
    fn = rep.parent
    res: dict[str, Any] = {"binary": binary, "replayed": True, "files": [],
                           "capture_launch": rep.doc.get("launch"),
                           "capture_bytes": rep.doc.get("bytes"),
                           **({"stand_in": rep.stand_in} if rep.stand_in else {})}
    if job.get("variant"):
        fn = _variant(job)
        chk = rep.check(fn)
        res.update({"variant_check": chk, "rel_err_vs_parent": chk["rel_err_vs_parent"],
                    "tolerance": job.get("tolerance")})
        mark = took("variant_compile_check", mark)
    action = job["action"]
    if action == "time":
        res["files"] = [_time(rep, fn, job, out)]
        if job.get("variant") and rep.variant_kernel is not None:
            # the variant's SASS: the probe's footprint is compared with the parent's
            import os

            from argusdb.observe.runner.gpu_tools import save_asm

            info = save_asm(rep.variant_kernel, out, f"variant.{os.getpid()}")
            res["files"] += [f for f in info.pop("files", []) if f.endswith(".sass")]
    elif action == "plain":
        rep.launch(fn)
        rep.sync()
    elif action == "proton":
        from argusdb.observe.launch.proton_hooks import Instrumentation

        instr = Instrumentation(out)
        instr.around(lambda: rep.launch(fn))
        res["files"] = instr.files
        res["instrumented_binary"] = (res.get("variant_check") or {}).get("variant_binary")
    elif action == "pcsampling" and pcs is not None:
        n = int(job.get("launches", 20))
        for i in range(n):
            pcs.sample(lambda: rep.launch(fn))
            pcs.took(i)
        res["files"] = pcs.files
        res["launches_sampled"] = n
    else:
        raise ValueError(f"unknown replay action {action!r}")
    took(action, mark)
    res["gpu_s"] = time.monotonic() - t0
    res["stages_s"] = stages
    (out / "result.json").write_text(json.dumps(res, indent=1, default=str))
    return res


def _time(rep: Replayer, fn: Any, job: dict[str, Any], out: Path) -> str:
    """CUPTI activity of ``warmup + launches`` replays, each from restored memory and a cold
    L2; the kernel records of the replays, then the ``LAUNCH_REPLAY`` record."""
    from argusdb.collectors.cupti.activity import REPLAY_KIND
    from argusdb.observe.runner.gpu_tools import Activity, write_jsonl

    global _ACTIVITY
    n = int(job.get("warmup", 1)) + int(job.get("launches", 20))
    act = _ACTIVITY = _ACTIVITY or Activity()  # CUPTI takes its callbacks once a process
    act.start()
    for _ in range(n):
        rep.launch(fn, flush=True)
    recs = act.stop(None)
    mine = [r for r in recs if r.get("kind") == "CONCURRENT_KERNEL"
            and r.get("name") == rep.kernel]
    if len(mine) != n:
        raise RuntimeError(f"CUPTI saw {len(mine)} launches of {rep.kernel}, {n} were replayed")
    keep = {r["correlation_id"] for r in mine}
    kept = [r for r in recs if r.get("correlation_id") in keep]
    kept.append({"kind": REPLAY_KIND, "capture_launch": rep.doc.get("launch"),
                 "restored_bytes": rep.doc.get("bytes"), "l2_flush_bytes": FLUSH_BYTES,
                 "launches": n})
    name = f"replay.{out.name}.cupti.jsonl"
    write_jsonl(out / name, kept)
    return name


def preload(timing: bool) -> None:
    """Import what every job needs (torch, Triton, argusdb's capture; cupti-python for timing)
    before the first job comes; none of it touches the GPU."""
    import torch  # noqa: F401
    import triton  # noqa: F401

    from argusdb.observe.launch import capture  # noqa: F401

    if timing:
        from cupti import cupti  # noqa: F401


def wait(job_file: Path, poll_s: float = 0.01) -> None:
    """Run the one job of ``job_file`` once it exists (written whole: renamed into place)."""
    preload(timing=False)
    while not job_file.exists():
        time.sleep(poll_s)
    run_job(json.loads(job_file.read_text()), {})


def serve(timing: bool = True) -> None:
    """Run jobs from stdin (one JSON object a line) in this one process; each answers with a
    line ``ARGUS-RESULT {"ok": ...}``."""
    try:
        preload(timing)
    except ImportError:  # the job that needs it reports what is missing
        pass
    cache: dict[str, Replayer] = {}
    for line in sys.stdin:
        try:
            run_job(json.loads(line), cache)
            answer: dict[str, Any] = {"ok": True}
        except Exception as exc:  # report and keep serving: the runner decides what follows
            answer = {"ok": False, "error": repr(exc)[:2000]}
        print("ARGUS-RESULT " + json.dumps(answer), flush=True)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["serve"]:
        serve(timing="--no-timing" not in args)
        return
    if len(args) == 2 and args[0] == "wait":
        wait(Path(args[1]))
        return
    if len(args) != 1:
        sys.exit("usage: python -m argusdb.observe.runner.replay JOB.json | serve "
                 "[--no-timing] | wait JOB.json")
    run_job(json.loads(Path(args[0]).read_text()), {})


if __name__ == "__main__":
    main()
