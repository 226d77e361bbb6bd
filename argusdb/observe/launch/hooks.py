"""The launcher's in-process side: Triton hooks installed before the program imports its kernels.

Loaded by the bootstrap ``sitecustomize`` (``argusdb/observe/launch/boot``) in every Python
process of an observed command (``torchrun`` ranks and subprocesses too), when
``ARGUS_LAUNCH_SPEC`` names a spec file. Nothing of the user's files is edited. What it does
in the process:

- wraps ``JITFunction.run`` (and the interpreter's ``InterpretedFunction.run``) to see every
  launch of the JIT function the spec names (``kernel`` defined in a module ``program``), with
  the compiled binary each launch used (hash, num_warps, num_stages, target, shared memory);
- ``triton.knobs.runtime.jit_post_compile_hook`` records the constexprs of each compilation;
- marks launches made while ``@triton.autotune`` benchmarks configs (``Autotuner._bench``) as
  ``autotune``, records the autotuner's chosen config, and with ``pin`` keeps only that config,
  so a measuring run launches the chosen binary only (the same launch sequence every run);
- with ``variant`` (a transformed copy of the kernel's module, e.g. a forced wait) runs the
  variant's kernel in place of the target on every launch, and on the checked launch runs the
  parent on copies of the same inputs and records the largest relative difference of outputs;
- with ``overrides`` (``{"num_stages": 1}``: pipelining off) passes them to every launch;
- in ``time`` mode (or a control run with ``time``), cupti-python activity tracing from start
  to exit (all kernels, the target's launches of other binaries or of warm-up written apart,
  never mixed into the evidence file);
- with ``capture`` (a control run of a plan that replays), the arguments of the launch the plan
  measures, copied before it runs (:mod:`argusdb.observe.launch.capture`; that launch is kept
  apart from the timing), written to ``capture/`` at exit;
- in ``proton`` mode (a ``proton_scopes`` variant), a Proton instrumentation session around the
  checked launch of the variant only, written to ``instr.chrome_trace``; in ``pcsampling``
  mode, Proton's PC sampling of ``sample_launches`` launches of the target from its
  ``sample_from``-th on (each under a scope named after the kernel; the session starts inactive
  before the target's first launch, so that its module is loaded under it), written to
  ``pcs.hatchet``;
- at exit writes ``launch.<pid>.json`` (launches, binaries, autotuning, variant check) and, in
  ``discover`` mode, the chosen binary's TTGIR, PTX and SASS (in a variant's ``time`` mode, the
  variant binary's: the probe's footprint is compared with the parent's).

Example:
    >>> # ARGUS_LAUNCH_SPEC=spec.json PYTHONPATH=<argusdb/observe/launch/boot> python prog.py
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from argusdb import environment
from argusdb.observe.launch.binary import (
    _plain,
    binary_field,
    binary_hash,
    binary_info,
    binary_matches,
    capturing,
    interpreter_key,
    predict_binary,
    specialization,
)
from argusdb.observe.launch.capture import DEFAULT_LIMIT_BYTES, LaunchCapture
from argusdb.observe.launch.check import VariantCheck
from argusdb.observe.launch.compiled import CompiledLaunches
from argusdb.observe.launch.first import AsmAhead, FirstEvidence
from argusdb.observe.launch.proton_hooks import Instrumentation, PcSampling
from argusdb.observe.launch.timing import TimingSplit
from argusdb.observe.launch.variant_load import _variant_statement, load_variant

__all__ = ["SPEC_ENV", "State", "_variant_statement", "binary_field", "binary_hash",
           "binary_info", "binary_matches", "install", "install_from_env", "interpreter_key",
           "load_variant", "specialization"]

SPEC_ENV = environment.LAUNCH_SPEC.name

_TL = threading.local()


def _depth() -> int:
    return int(getattr(_TL, "autotune", 0))


class State:
    """What the process saw of the target kernel; written out at exit.

    The launch path and the record are here; each other concern is a small object of its own
    (as Proton's hooks keep one class per concern): :class:`~.timing.TimingSplit` (CUPTI
    activity, ``time`` mode or a control run with ``time``), :class:`~.check.VariantCheck`
    (a variant's outputs against the parent's), :class:`~.proton_hooks.Instrumentation` and
    :class:`~.proton_hooks.PcSampling` (Proton sessions), :class:`~.capture.LaunchCapture`
    (the measured launch's arguments, a control run with ``capture``)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.kernel: str = spec["kernel"]
        self.program: str = spec["program"]
        self.out = Path(spec["out"])
        self.launches: list[dict[str, Any]] = []
        self.binaries: dict[str, dict[str, Any]] = {}
        self.compiled: dict[str, Any] = {}
        self.constexprs: dict[int, dict[str, Any]] = {}
        self.module_file: str | None = None
        self.autotune: dict[str, Any] = {"chosen": [], "pinned": None, "configs": None}
        self.variant_path = (str(Path(spec["variant"]).resolve()) if spec.get("variant")
                             else None)
        self.variant_fn: Any = None
        self.errors: list[str] = []
        self.targets: dict[int, bool] = {}
        self.activity: Any = None
        self.lock = threading.Lock()
        mode = spec.get("mode")
        self.checker = VariantCheck(int(spec.get("check_index", 0)))
        self.timer = TimingSplit(self.kernel, int(spec.get("warmup", 0)))
        self.instr = Instrumentation(self.out) if mode == "proton" else None
        self.pcs = (PcSampling(self.out, self.kernel, int(spec.get("sample_from", 0)),
                               int(spec.get("sample_launches", 20)))
                    if mode == "pcsampling" else None)
        cap = spec.get("capture")
        self.capture = (LaunchCapture(self.out, int(cap.get("warmup", 0)),
                                      int(cap.get("limit_bytes", DEFAULT_LIMIT_BYTES)))
                        if cap else None)
        #: launches whose inputs the capture copied right before them (apart from timing)
        self.copied: set[int] = set()
        #: the program's launches made outside CUDA graph capture so far (counted as they are
        #: recorded: every launch asks, so a count over ``launches`` would grow with the run)
        self.settled = 0
        #: launches Inductor's launcher made (torch.compile): the user's kernel, neighbours
        self.inductor = CompiledLaunches(self)
        #: a control run with timing prints the in-context duration before the program ends
        self.first = (FirstEvidence(self.out, self.kernel, int(spec.get("warmup", 0)))
                      if mode == "discover" and spec.get("time") else None)
        self.asm_ahead = AsmAhead(self.out, int(spec.get("warmup", 0))) \
            if mode == "discover" else None

    @property
    def check(self) -> dict[str, Any] | None:
        """The variant check's result (None until the checked launch ran)."""
        return self.checker.result

    @property
    def timing(self) -> dict[str, int] | None:
        """Of the timing split: the chosen binary's launches, those kept, graph executions."""
        return self.timer.counts

    def match_timing(self, recs: list[dict[str, Any]]
                     ) -> list[tuple[dict[str, Any], dict[str, Any]]] | None:
        """:meth:`TimingSplit.match` of this process's launches (errors into ``errors``)."""
        got = self.timer.match(recs, self.launches)
        self.errors += self.timer.errors
        self.timer.errors = []
        return got

    def split_timing(self, recs: list[dict[str, Any]], chosen: str | None, pid: int
                     ) -> list[str]:
        """:meth:`TimingSplit.split` of this process's launches into ``out``."""
        files = self.timer.split(recs, self.launches, chosen, self.out, pid,
                                 frozenset(self.copied))
        self.errors += self.timer.errors
        self.timer.errors = []
        return files

    # -- which functions are the target ------------------------------------------------
    def is_target(self, jit: Any) -> bool:
        key = id(jit)
        hit = self.targets.get(key)
        if hit is None:
            fn = getattr(jit, "fn", None)
            code = getattr(fn, "__code__", None)
            hit = code is not None and bool(
                getattr(fn, "__name__", None) == self.kernel
                and Path(code.co_filename).stem == self.program
                and str(Path(code.co_filename).resolve()) != self.variant_path)
            self.targets[key] = hit
            if hit and code is not None and self.module_file is None:
                self.module_file = str(Path(code.co_filename).resolve())
        return hit

    @property
    def is_variant(self) -> bool:
        """Whether this run launches a variant (another module's kernel, or other options)."""
        return self.variant_path is not None or bool(self.spec.get("overrides"))

    # -- launches ---------------------------------------------------------------------
    def launch(self, jit: Any, orig: Any, args: tuple[Any, ...], grid: Any,
               kwargs: dict[str, Any]) -> Any:
        role = "autotune" if _depth() else "program"
        kw = {**kwargs, **(self.spec.get("overrides") or {})}
        run_fn, run_self = orig, jit
        if self.variant_path:
            var = self.variant(jit)
            run_self = var
            run_fn = type(var).run
        captured = capturing()
        settled = self.settled
        if self.is_variant and self.checker.due(role, captured, settled):
            return self._checked(jit, orig, run_self, run_fn, args, grid, kw, kwargs)
        if self.pcs is not None:
            self.pcs.open()
        sampled = (self.pcs is not None and role == "program" and not captured
                   and self.pcs.wants(settled))
        snap = None
        if (self.capture is not None and role == "program" and not captured
                and self.capture.wants(predict_binary(jit, args, kw))):
            snap = self.capture.before(jit, args, kw, grid)
        t0 = time.perf_counter_ns()
        if sampled and self.pcs is not None:
            kernel = self.pcs.sample(lambda: run_fn(run_self, *args, grid=grid, warmup=False,
                                                    **kw))
        else:
            kernel = run_fn(run_self, *args, grid=grid, warmup=False, **kw)
        self.record(jit, kernel, role, t0, args, kw, captured)
        if self.capture is not None and role == "program":
            last = self.launches[-1]
            self.capture.after(snap, last["binary"], last["i"], captured)
            if snap is not None and snap.storages:
                self.copied.add(last["i"])
        if sampled and self.pcs is not None:
            self.pcs.took(self.launches[-1]["i"])
        if self.first is not None and self.activity is not None and self.first.due(self.settled):
            self.first.start(self)
        if self.asm_ahead is not None and self.asm_ahead.due(self.settled):
            last = self.launches[-1]
            if last["role"] == "program" and last["binary"] in self.compiled:
                self.asm_ahead.start(last["binary"], self.compiled[last["binary"]],
                                     f"binary.{os.getpid()}")
        return kernel

    def record(self, jit: Any, kernel: Any, role: str, t0: int, args: tuple[Any, ...],
               kw: dict[str, Any], captured: bool = False) -> None:
        info = None
        h = binary_hash(kernel)
        if kernel is None:  # the interpreter compiles nothing: its "binaries" are constexpr sets
            info = binary_info(jit, kernel, args, kw, None)
            h = interpreter_key(info)
        with self.lock:
            if h not in self.binaries:
                self.binaries[h] = info or binary_info(jit, kernel, args, kw,
                                                       self.constexprs.pop(id(jit), None))
                self.compiled[h] = kernel
            self.launches.append({"i": len(self.launches), "role": role, "binary": h,
                                  "t_ns": t0, **({"captured": True} if captured else {})})
            if role == "program" and not captured:
                self.settled += 1

    def _checked(self, jit: Any, orig: Any, var: Any, var_run: Any, args: tuple[Any, ...],
                 grid: Any, kw: dict[str, Any], parent_kwargs: dict[str, Any]) -> Any:
        """Run the variant (another module's kernel, or other options: ``kw``) on the program's
        inputs and the parent (the program's own options) on copies of the same inputs; in
        ``proton`` mode the variant's launch is the instrumented one."""
        # Proton instruments compiled binaries: the interpreter compiles none
        instrumented = (self.instr is not None
                        and os.environ.get("TRITON_INTERPRET", "0") != "1")
        t0 = time.perf_counter_ns()
        times: list[int] = []

        def variant() -> Any:
            launch = lambda: var_run(var, *args, grid=grid, warmup=False, **kw)  # noqa: E731
            return self.instr.around(launch) if instrumented and self.instr else launch()

        def parent(pa: tuple[Any, ...], pkw: dict[str, Any]) -> Any:
            times.append(time.perf_counter_ns())
            return orig(jit, *pa, grid=grid, warmup=False, **pkw)

        kernel, pk, parent_args, parent_kw = self.checker.run(variant, parent, args,
                                                              parent_kwargs)
        self.record(jit, kernel, "program", t0, args, kw)
        self.record(jit, pk, "check", times[0], parent_args, parent_kw)
        res = self.checker.result or {}
        res.update({"launch": len(self.launches) - 2, "variant_binary": binary_hash(kernel),
                    "parent_binary": binary_hash(pk)})
        if not res.get("tensors_compared"):
            self.errors.append("the checked launch has no tensor argument to compare the "
                               "variant against the parent")
        return kernel

    def variant(self, jit: Any) -> Any:
        if self.variant_fn is None:
            self.variant_fn = load_variant(jit, self.variant_path or "", self.kernel)
            self.targets[id(self.variant_fn)] = False
        return self.variant_fn

    # -- autotuning ---------------------------------------------------------------------
    def autotuner_is_target(self, tuner: Any) -> bool:
        fn: Any = getattr(tuner, "base_fn", None)
        code = getattr(fn, "__code__", None)
        return bool(code is not None and fn.__name__ == self.kernel
                    and Path(code.co_filename).stem == self.program
                    and str(Path(code.co_filename).resolve()) != self.variant_path)

    def pin(self, tuner: Any) -> None:
        pin = self.spec.get("pin")
        if not pin or len(tuner.configs) < 2:
            return
        match = [c for c in tuner.configs if str(c) == pin]
        if match:
            tuner.configs = match[:1]
            self.autotune["pinned"] = pin
        else:
            self.errors.append(f"the autotuner has no config {pin!r} to pin "
                               f"(configs: {[str(c) for c in tuner.configs]})")

    # -- exit ---------------------------------------------------------------------------
    def chosen(self) -> str | None:
        """The binary measured: the spec's; else, with a ``select`` in the spec (the user's
        ``--option num_warps=4 constexpr.BLOCK=4096 binary=<hash prefix>``), the binary of the
        program's last launch that matches all of it (None when none does); else the one of
        the program's last launch."""
        want = self.spec.get("binary")
        if want and not self.variant_path:
            return str(want)
        prog = [x for x in self.launches if x["role"] == "program"]
        select = self.spec.get("select") or {}
        if select and not self.variant_path:
            prog = [x for x in prog if binary_matches(self.binaries[x["binary"]], select)]
        return prog[-1]["binary"] if prog else None

    def finish(self) -> None:
        try:
            self._finish()
        except Exception as exc:  # never hide the program's own exit status
            print(f"argusdb launch: could not write the launch record: {exc!r}", file=sys.stderr)

    def _finish(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        pid = os.getpid()
        files: list[str] = []
        # seconds of each exit stage, and a (perf_counter_ns, unix) pair: launches' ``t_ns``
        # on the wall clock, e.g. when the measured launch ran against when evidence came
        stages: dict[str, float] = {}
        clock = (time.perf_counter_ns(), time.time())
        mark = time.perf_counter()

        def took(stage: str) -> None:
            nonlocal mark
            now = time.perf_counter()
            stages[stage] = round(now - mark, 4)
            mark = now

        chosen = self.chosen()
        self.errors += self.inductor.finish_errors()
        if self.is_variant and self.check is None and any(x.get("captured") for x in self.launches):
            k = int(self.spec.get("check_index", 0))
            self.errors.append(f"the variant was not checked against the parent: the program "
                               f"launched {self.kernel} fewer than {k + 1} times outside CUDA "
                               "graph capture, and a check cannot run inside a capture")
        recs = self.activity.stop(None) if self.activity is not None else None
        took("cupti_stop")
        if recs is not None:
            files += self.split_timing(recs, chosen, pid)
            took("timing_write")
        if self.pcs is not None:  # fewer launches than asked: end it here
            self.pcs.close(self.errors)
        proton_files = [*(self.pcs.files if self.pcs else []),
                        *(self.instr.files if self.instr else [])]
        files += [f for f in proton_files if (self.out / f).exists()]
        if self.instr is not None and self.launches and not self.instr.files:
            k = int(self.spec.get("check_index", 0))
            self.errors.append(f"no launch was instrumented: the program launched "
                               f"{self.kernel} fewer than {k + 1} times outside CUDA graph "
                               "capture (the instrumented launch is the checked one), or ran "
                               "under TRITON_INTERPRET (no binary to instrument)")
        # the binary measured: the parent's in the control run (attribution's call sites),
        # the variant's in its timing run (the probe's footprint against the parent's code)
        mode = self.spec.get("mode")
        if chosen in self.compiled and (mode == "discover" or (mode == "time"
                                                               and self.is_variant)):
            from argusdb.observe.runner.gpu_tools import save_asm

            stem = "binary" if mode == "discover" else "variant"
            ahead = self.asm_ahead.take(chosen) if self.asm_ahead is not None else None
            info = ahead or save_asm(self.compiled[chosen], self.out, f"{stem}.{pid}")
            asm_files = info.pop("files", [])
            files += asm_files + self.inductor.map_files(chosen, asm_files)
            self.binaries[chosen]["sass_info"] = info
            took("asm")
        doc = {"pid": pid, "ppid": os.getppid(), "argv": sys.argv,
               "rank": os.environ.get("RANK"), "kernel": self.kernel, "program": self.program,
               "module_file": self.module_file, "mode": self.spec.get("mode"),
               "launches": self.launches, "binaries": self.binaries, "chosen_binary": chosen,
               "autotune": self.autotune, "variant_check": self.check, "errors": self.errors,
               "timing": self.timing, "sampled": self.pcs.sampled if self.pcs else [],
               "files": files}
        if self.inductor.seen or "torch._inductor" in sys.modules:
            doc["inductor"] = self.inductor.record()
        if self.capture is not None:
            cap = self.capture.write(chosen, {
                "kernel": self.kernel, "program": self.program,
                "module_file": self.module_file,
                "binary_info": {k: v for k, v in self.binaries.get(chosen or "", {}).items()
                                if k != "sass_info"}})
            doc["capture"] = cap
            if cap.get("ok"):
                self.inductor.write_capture(chosen, self.out / str(cap["folder"]))
            took("capture_write")
        doc["exit_stages_s"], doc["clock_pair"] = stages, list(clock)
        if not self.launches and "torch._inductor" in sys.modules:
            # torch.compile copies a user's @triton.jit function called in a compiled region
            # into its generated code and launches that with its own launcher, never through
            # JITFunction.run: none of those launches reach the hooks
            doc["inductor_loaded"] = True
        (self.out / f"launch.{pid}.json").write_text(json.dumps(doc, indent=1, default=str))

_STATE: State | None = None


def install(spec_path: str) -> State:
    """Install the hooks of the spec file into this process (once)."""
    global _STATE
    if _STATE is not None:
        return _STATE
    spec = json.loads(Path(spec_path).read_text())
    st = State(spec)
    _STATE = st
    import triton
    from triton.runtime import autotuner
    from triton.runtime.jit import JITFunction

    from argusdb.observe.launch import inductor

    depth = inductor.in_run()

    def wrap(cls: Any) -> None:
        orig = cls.run

        def run(self: Any, *args: Any, grid: Any = None, warmup: bool = False,
                **kwargs: Any) -> Any:
            depth.enter()  # its launch_metadata call is this launch, recorded here
            try:
                if warmup or not st.is_target(self):
                    return orig(self, *args, grid=grid, warmup=warmup, **kwargs)
                return st.launch(self, orig, args, grid, kwargs)
            finally:
                depth.leave()

        cls.run = run

    wrap(JITFunction)
    try:
        from triton.runtime.interpreter import InterpretedFunction

        wrap(InterpretedFunction)
    except ImportError:
        pass

    bench, tune = autotuner.Autotuner._bench, autotuner.Autotuner.run

    def _bench(self: Any, *args: Any, **kwargs: Any) -> Any:
        _TL.autotune = _depth() + 1
        try:
            return bench(self, *args, **kwargs)
        finally:
            _TL.autotune = _depth() - 1

    def _run(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not st.autotuner_is_target(self):
            return tune(self, *args, **kwargs)
        if st.autotune["configs"] is None:
            st.autotune["configs"] = [str(c) for c in self.configs]
        st.pin(self)
        ret = tune(self, *args, **kwargs)
        best = str(getattr(self, "best_config", ""))
        if best and best not in st.autotune["chosen"]:
            st.autotune["chosen"].append(best)
        return ret

    autotuner.Autotuner._bench = _bench
    autotuner.Autotuner.run = _run

    prev = triton.knobs.runtime.jit_post_compile_hook

    def post_compile(*, key: Any, repr: str, fn: Any, compile: Any, is_manual_warmup: bool,
                     already_compiled: bool) -> Any:
        jit = getattr(fn, "jit_function", None)
        if jit is not None and st.is_target(jit):
            names = list(jit.arg_names)
            st.constexprs[id(jit)] = {
                names[p[0]] if isinstance(p, tuple) and len(p) == 1 else str(p): _plain(v)
                for p, v in (compile.get("constants") or {}).items()}
        if prev is not None:
            return prev(key=key, repr=repr, fn=fn, compile=compile,
                        is_manual_warmup=is_manual_warmup, already_compiled=already_compiled)
        return None

    triton.knobs.runtime.jit_post_compile_hook = post_compile
    if spec.get("mode") not in ("proton", "pcsampling"):
        # Proton's own launch hooks are installed only where none is: its modes go without
        inductor.install(st.inductor.launch, st.errors)
    if spec.get("mode") == "time" or spec.get("time"):
        from argusdb.observe.runner.gpu_tools import Activity

        st.activity = Activity()
        st.activity.start()
    atexit.register(st.finish)
    return st


def _this_rank(spec_path: str) -> bool:
    """Whether this process is the one a spec with ``rank`` measures: a torchrun rank whose
    ``RANK`` is that rank (the other ranks, and torchrun's own agent, which has no ``RANK``, run
    without hooks). A spec without ``rank`` installs in every process."""
    try:
        want = json.loads(Path(spec_path).read_text()).get("rank")
    except (OSError, ValueError):
        return True  # install() reports the unreadable spec
    return want is None or os.environ.get("RANK") == str(want)


def install_from_env() -> None:
    """The bootstrap's entry: install when ``ARGUS_LAUNCH_SPEC`` is set; report, never raise."""
    spec = os.environ.get(SPEC_ENV)
    if not spec or not _this_rank(spec):
        return
    try:
        install(spec)
    except Exception as exc:
        if sys.argv not in ([], [""]):  # not a tool's embedded interpreter (ncu's)
            print(f"argusdb launch: hooks not installed: {exc!r}", file=sys.stderr)
        out = json.loads(Path(spec).read_text()).get("out") if Path(spec).exists() else None
        if out:
            Path(out).mkdir(parents=True, exist_ok=True)
            (Path(out) / f"launch.{os.getpid()}.json").write_text(json.dumps(
                {"pid": os.getpid(), "argv": sys.argv, "errors": [
                    f"hooks not installed: {exc!r}"], "launches": [], "binaries": {}}))
