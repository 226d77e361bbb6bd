"""The launcher's in-process side: Triton hooks installed before the program imports its kernels.

Loaded by the bootstrap ``sitecustomize`` (``argusdb/observe/launch/boot``) in every Python process
of
an observed command (``torchrun`` ranks and subprocesses too), when ``ARGUS_LAUNCH_SPEC`` names
a spec file. Nothing of the user's files is edited. What it does in the process:

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
- in ``time`` mode, cupti-python activity tracing from start to exit (all kernels, the target's
  launches of other binaries or of warm-up written apart, never mixed into the evidence file);
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

SPEC_ENV = "ARGUS_LAUNCH_SPEC"

_TL = threading.local()


def _depth() -> int:
    return int(getattr(_TL, "autotune", 0))


class State:
    """What the process saw of the target kernel; written out at exit."""

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
        self.check: dict[str, Any] | None = None
        self.errors: list[str] = []
        self.targets: dict[int, bool] = {}
        self.activity: Any = None
        #: files Proton wrote (``proton`` and ``pcsampling`` modes)
        self.proton_files: list[str] = []
        #: launches (``i``) made inside the PC-sampling session (``pcsampling`` mode)
        self.sampled: list[int] = []
        #: Proton's PC-sampling session, started before the target's first launch
        self.pcs: Any = None
        #: of the timing split: the chosen binary's launches, those kept, graph executions
        self.timing: dict[str, int] | None = None
        self.lock = threading.Lock()

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
        settled = sum(1 for x in self.launches if x["role"] == "program"
                      and not x.get("captured"))
        variant = self.is_variant
        # never inside CUDA graph capture: copies, a second launch and comparisons would be
        # captured too (and a comparison's sync invalidates the capture)
        check = (variant and role == "program" and self.check is None and not captured
                 and settled >= int(self.spec.get("check_index", 0)))
        if check:
            return self._checked(jit, orig, run_self, run_fn, args, grid, kw, kwargs)
        sampling = self.spec.get("mode") == "pcsampling"
        if sampling and self.pcs is None:
            self._pcs_open()
        sampled = (sampling and role == "program" and not captured
                   and settled >= int(self.spec.get("sample_from", 0))
                   and len(self.sampled) < int(self.spec.get("sample_launches", 20)))
        t0 = time.perf_counter_ns()
        if sampled:
            kernel = self._sample(lambda: run_fn(run_self, *args, grid=grid, warmup=False, **kw))
        else:
            kernel = run_fn(run_self, *args, grid=grid, warmup=False, **kw)
        self.record(jit, kernel, role, t0, args, kw, captured)
        if sampled:
            self.sampled.append(self.launches[-1]["i"])
            if len(self.sampled) >= int(self.spec.get("sample_launches", 20)):
                self._proton_finish("pcs.hatchet", "hatchet")
        return kernel

    def _pcs_open(self) -> None:
        """Start Proton's PC-sampling session before the target's first launch, inactive.

        PC sampling maps a sample to its source line only for a module loaded while the
        session exists (seen on the H200: a session started after the kernel's first launch
        gave samples without lines), and the target's module loads at its first launch, which
        compiles it. The session then stays inactive but for the sampled launches."""
        import triton.profiler as proton

        self.out.mkdir(parents=True, exist_ok=True)
        self.pcs = proton.start(str(self.out / "pcs"), mode="pcsampling")
        proton.deactivate(self.pcs)

    def _sample(self, launch: Any) -> Any:
        """One launch of the target with the PC-sampling session active, under a scope named
        after the kernel (as the harness samples); it waits for the launch before the session
        goes inactive again, so no sample of it is lost and none of other launches is taken."""
        import torch
        import triton.profiler as proton

        proton.activate(self.pcs)
        try:
            with proton.scope(self.kernel):
                return launch()
        finally:
            torch.cuda.synchronize()
            proton.deactivate(self.pcs)

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

    def _checked(self, jit: Any, orig: Any, var: Any, var_run: Any, args: tuple[Any, ...],
                 grid: Any, kw: dict[str, Any], parent_kwargs: dict[str, Any]) -> Any:
        """Run the variant (another module's kernel, or other options: ``kw``) on the program's
        inputs and the parent (the program's own options) on copies of the same inputs."""
        import torch

        def copy(x: Any) -> Any:
            return x.clone() if isinstance(x, torch.Tensor) else x

        before = [copy(a) for a in args]
        parent_args = tuple(copy(a) for a in args)
        parent_kw = {k: copy(v) for k, v in parent_kwargs.items()}
        t0 = time.perf_counter_ns()
        # Proton instruments compiled binaries: the interpreter compiles none
        instrumented = (self.spec.get("mode") == "proton"
                        and os.environ.get("TRITON_INTERPRET", "0") != "1")
        if instrumented:
            self._proton_start()
        kernel = var_run(var, *args, grid=grid, warmup=False, **kw)
        if instrumented:
            self._proton_finish("instr.chrome_trace", "chrome_trace")
        self.record(jit, kernel, "program", t0, args, kw)
        t1 = time.perf_counter_ns()
        pk = orig(jit, *parent_args, grid=grid, warmup=False, **parent_kw)
        self.record(jit, pk, "check", t1, parent_args, parent_kw)
        # Every tensor argument after both launches: inputs stay equal, outputs must agree.
        # (Which ones are outputs cannot be told from the values: a buffer reused from the
        # previous launch may already hold the result.)
        errs: list[float] = []
        changed = 0
        for a, b, p in zip(args, before, parent_args, strict=True):
            if not isinstance(a, torch.Tensor) or a.numel() == 0:
                continue
            changed += int(not torch.equal(a, b) or not torch.equal(p, b))
            ref = p.double()
            scale = max(float(ref.abs().max()), 1e-30)
            errs.append(float((a.double() - ref).abs().max()) / scale)
        self.check = {"launch": len(self.launches) - 2, "tensors_compared": len(errs),
                      "tensors_written": changed,
                      "rel_err_vs_parent": max(errs) if errs else None,
                      "variant_binary": binary_hash(kernel), "parent_binary": binary_hash(pk)}
        if not errs:
            self.errors.append("the checked launch has no tensor argument to compare the "
                               "variant against the parent")
        return kernel

    def _proton_start(self) -> None:
        """Start Proton's instrumentation session for the one checked launch of the variant:
        the variant's scopes record per-CTA, per-warp events only in a binary compiled while a
        session is active (Triton compiles that launch again, with the instrumentation), and
        no other launch of the program is instrumented."""
        import triton.profiler as proton

        self.out.mkdir(parents=True, exist_ok=True)
        proton.start(str(self.out / "instr"), backend="instrumentation", data="trace")

    def _proton_finish(self, name: str, output_format: str) -> None:
        """Wait for the launches of the Proton session and write its file ``name``
        (``instr.chrome_trace`` of instrumentation, ``pcs.hatchet`` of PC sampling)."""
        import torch
        import triton.profiler as proton

        torch.cuda.synchronize()
        proton.finalize(output_format=output_format)
        self.proton_files.append(name)

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
        chosen = self.chosen()
        if self.is_variant and self.check is None and any(x.get("captured") for x in self.launches):
            k = int(self.spec.get("check_index", 0))
            self.errors.append(f"the variant was not checked against the parent: the program "
                               f"launched {self.kernel} fewer than {k + 1} times outside CUDA "
                               "graph capture, and a check cannot run inside a capture")
        recs = self.activity.stop(None) if self.activity is not None else None
        if recs is not None:
            files += self.split_timing(recs, chosen, pid)
        if self.sampled and not self.proton_files:  # fewer launches than asked: end it here
            try:
                self._proton_finish("pcs.hatchet", "hatchet")
            except Exception as exc:
                self.errors.append(f"Proton's PC-sampling session could not be finished: {exc!r}")
        files += [f for f in self.proton_files if (self.out / f).exists()]
        if self.spec.get("mode") == "proton" and self.launches and not self.proton_files:
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
            info = save_asm(self.compiled[chosen], self.out, f"{stem}.{pid}")
            files += info.pop("files", [])
            self.binaries[chosen]["sass_info"] = info
        doc = {"pid": pid, "ppid": os.getppid(), "argv": sys.argv,
               "rank": os.environ.get("RANK"), "kernel": self.kernel, "program": self.program,
               "module_file": self.module_file, "mode": self.spec.get("mode"),
               "launches": self.launches, "binaries": self.binaries, "chosen_binary": chosen,
               "autotune": self.autotune, "variant_check": self.check, "errors": self.errors,
               "timing": self.timing, "sampled": self.sampled, "files": files}
        if not self.launches and "torch._inductor" in sys.modules:
            # torch.compile copies a user's @triton.jit function called in a compiled region
            # into its generated code and launches that with its own launcher, never through
            # JITFunction.run: none of those launches reach the hooks
            doc["inductor_loaded"] = True
        (self.out / f"launch.{pid}.json").write_text(json.dumps(doc, indent=1, default=str))

    def split_timing(self, recs: list[dict[str, Any]], chosen: str | None, pid: int
                     ) -> list[str]:
        """Write the evidence file (kernels of the program, the target's measured binary after
        warm-up) and, apart, the target's other launches (autotuning, warm-up, checks)."""
        from argusdb.observe.runner.gpu_tools import write_jsonl

        paired = self.match_timing(recs)
        if paired is None:
            write_jsonl(self.out / f"all.{pid}.cupti.jsonl", recs)
            return [f"all.{pid}.cupti.jsonl"]
        warmup = int(self.spec.get("warmup", 0))
        apart: set[int] = set()
        seen = 0
        for rec, launch in paired:
            rec["argus_binary"], rec["argus_role"] = launch["binary"], launch["role"]
            keep = launch["role"] == "program" and launch["binary"] == chosen
            if keep:
                keep = seen >= warmup
                seen += 1
            if not keep:
                apart.add(id(rec))
        self.timing = {"of_binary": seen, "kept": max(0, seen - warmup),
                       "graph_executions": sum(1 for r, _ in paired if r.get("graph_id")),
                       "apart": len(apart)}
        evidence = [r for r in recs if id(r) not in apart]
        other = [r for r in recs if id(r) in apart]
        for r in evidence:
            r.pop("argus_binary", None)
            r.pop("argus_role", None)
        write_jsonl(self.out / f"timing.{pid}.cupti.jsonl", evidence)
        write_jsonl(self.out / f"apart.{pid}.jsonl", other)
        return [f"timing.{pid}.cupti.jsonl", f"apart.{pid}.jsonl"]


    def match_timing(self, recs: list[dict[str, Any]]
                     ) -> list[tuple[dict[str, Any], dict[str, Any]]] | None:
        """The target's CUPTI kernel records in start order, each with the launch it ran.

        A launch made outside CUDA graph capture ran once: the records launched by no graph
        (``graph_id`` 0) are those launches, in correlation order. A launch made while its
        stream was capturing ran nothing then; it became a node of the graph, and each replay
        of the graph runs it (records with a ``graph_id``): all of them are that captured
        launch's binary. Records of a graph when the captured launches were of several
        binaries cannot be told apart (None, with the error).
        """
        mine = [r for r in recs if r.get("kind") == "CONCURRENT_KERNEL"
                and r.get("name") == self.kernel]
        eager = sorted((r for r in mine if not r.get("graph_id")),
                       key=lambda r: r["correlation_id"])
        graphed = [r for r in mine if r.get("graph_id")]
        direct = [x for x in self.launches if not x.get("captured")]
        captured = [x for x in self.launches if x.get("captured")]
        if len(eager) != len(direct):
            self.errors.append(f"CUPTI saw {len(eager)} launches of {self.kernel} outside CUDA "
                               f"graphs, the hook {len(direct)}: they cannot be matched to "
                               "binaries")
            return None
        if graphed and not captured:
            self.errors.append(f"CUPTI saw {len(graphed)} launches of {self.kernel} from CUDA "
                               "graphs, but the hook saw none of its launches captured (a "
                               "graph captured before the hooks, or built by hand): their "
                               "binary is unknown; capture the graph in the observed command, "
                               "after Triton's launch hooks are in place")
            return None
        kinds = {(x["binary"], x["role"]) for x in captured}
        if graphed and len(kinds) > 1:
            self.errors.append(f"{self.kernel} was captured into CUDA graphs as "
                               f"{len(kinds)} binaries; the {len(graphed)} launches of the "
                               "graphs' replays cannot be told apart by binary: observe a run "
                               "that captures one binary of it (one shape per graph)")
            return None
        pairs = list(zip(eager, direct, strict=True))
        if graphed:
            pairs += [(r, captured[0]) for r in graphed]
        return sorted(pairs, key=lambda p: p[0]["start"])


def capturing() -> bool:
    """Whether torch's current CUDA stream (the one Triton launches on) is capturing a graph."""
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_available()
                    and torch.cuda.is_current_stream_capturing())
    except Exception:  # a torch without CUDA or an uninitialized context: nothing captured
        return False


def binary_hash(kernel: Any) -> str:
    """The compiled binary's hash; ``interpreter`` under TRITON_INTERPRET (no binary)."""
    if kernel is None:
        return "interpreter"
    if hasattr(kernel, "result") and not hasattr(kernel, "hash"):
        kernel = kernel.result()
    return str(getattr(kernel, "hash", "unknown"))


def binary_info(jit: Any, kernel: Any, args: tuple[Any, ...], kw: dict[str, Any],
                constexprs: dict[str, Any] | None) -> dict[str, Any]:
    """num_warps, num_stages, target, shared memory, constexprs and argument specialization
    (:func:`specialization`) of one binary."""
    md = getattr(kernel, "metadata", None)
    if constexprs is None:  # not compiled in this process by the hook (interpreter)
        names = list(getattr(jit, "arg_names", []))
        values = dict(zip(names, args, strict=False)) | kw
        fn = getattr(jit, "fn", None)
        ann = getattr(fn, "__annotations__", {})
        constexprs = {k: _plain(values[k]) for k in names
                      if k in values and "constexpr" in str(ann.get(k, ""))}
    target = getattr(md, "target", None)
    return {"hash": binary_hash(kernel), "name": getattr(md, "name", None),
            "args": specialization(kernel),
            "num_warps": getattr(md, "num_warps", kw.get("num_warps")),
            "num_stages": getattr(md, "num_stages", kw.get("num_stages")),
            "num_ctas": getattr(md, "num_ctas", None), "shared": getattr(md, "shared", None),
            "target": (f"sm_{target.arch}" if target is not None and target.backend == "cuda"
                       else str(target) if target is not None else "interpreter"),
            "constexprs": constexprs}


def specialization(kernel: Any) -> dict[str, str]:
    """How the binary's JIT specialized each runtime argument: its type, and ``:div16`` where
    Triton assumed it divisible by 16 (``{"x_ptr": "*fp16:div16", "n_cols": "i32"}``), from the
    compiled kernel's source (``CompiledKernel.src``: its signature and ``tt.divisibility``
    attributes). Launches with other dtypes, or with lengths or pointers that are not multiples
    of 16, compile other binaries with the same constexprs and warps; this tells them apart.
    Empty without a compiled kernel (the interpreter)."""
    src = getattr(kernel, "src", None)
    sig = getattr(src, "signature", None)
    if not isinstance(sig, dict):
        return {}
    attrs = getattr(src, "attrs", None) or {}
    out: dict[str, str] = {}
    for i, (name, ty) in enumerate(sig.items()):
        if ty == "constexpr":
            continue
        div = [v for key, v in attrs.get((i,), []) if key == "tt.divisibility"]
        out[str(name)] = f"{ty}" + (f":div{div[0]}" if div else "")
    return out


def interpreter_key(info: dict[str, Any]) -> str:
    """The stand-in hash of a launch under ``TRITON_INTERPRET`` (no binary): ``interpreter``
    with its constexprs and num_warps, so launches that would compile to different binaries
    on a GPU stay apart here too."""
    parts = [f"{k}={v}" for k, v in sorted((info.get("constexprs") or {}).items())]
    if info.get("num_warps") is not None:
        parts.append(f"num_warps={info['num_warps']}")
    return "interpreter" + (":" + ",".join(parts) if parts else "")


def binary_matches(info: dict[str, Any], select: dict[str, str]) -> bool:
    """Whether a binary (:func:`binary_info`) has every ``select`` value: ``num_warps``,
    ``num_stages``, ``constexpr.NAME``, ``arg.NAME`` (its specialization, e.g. ``i32:div16``)
    compared as text, ``binary`` as a hash prefix."""
    for key, want in select.items():
        if key == "binary":
            got_ok = str(info.get("hash", "")).startswith(str(want))
        else:
            got = binary_field(info, key)
            got_ok = got is not None and str(got) == str(want)
        if not got_ok:
            return False
    return True


def binary_field(info: dict[str, Any], key: str) -> Any:
    """A binary's value for an ``--option`` key: ``num_warps``, ``num_stages``,
    ``constexpr.NAME`` (its constexprs) or ``arg.NAME`` (its argument specialization); None
    where it has none."""
    if key.startswith(("constexpr.", "arg.")):
        field, name = key.split(".", 1)
        return (info.get("constexprs" if field == "constexpr" else "args") or {}).get(name)
    return info.get(key)


def _plain(v: Any) -> Any:
    v = getattr(v, "value", v)
    return v if isinstance(v, int | float | str | bool) or v is None else str(v)


def load_variant(jit: Any, path: str, kernel: str) -> Any:
    """The variant's JIT function ``kernel`` (unwrapped from autotune/heuristics), loaded
    beside the parent's module without running the rest of the variant's module.

    The variant file is the parent module with the kernel rewritten and ``_argus`` helpers
    added. Running all of it again would repeat the module's side effects: a
    ``torch.library`` op registered again would then launch the variant's kernel past the
    hooks, a registry filled twice, GPU memory allocated at import. So the variant module
    starts as a copy of the parent module's namespace (its constants, helpers and imports,
    as the program set them up), and only the variant's imports, its ``_argus``/``_ARGUS``
    assignments and its Triton functions (``@triton.jit``, with ``autotune``/``heuristics``
    around them) run in it, compiled from the variant file at their own lines, so Triton reads
    their source from that file. Where that leaves the kernel undefined by the variant file
    (no loaded parent module, a kernel made by a call rather than a decorator) the whole file
    runs, as a module of its own.
    """
    import ast
    import importlib.util
    import types

    parent = sys.modules.get(jit.fn.__module__)
    name = f"{jit.fn.__module__}__argus_variant"
    if parent is not None:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"), path)
        tree.body = [n for n in tree.body if _variant_statement(n)]
        mod = types.ModuleType(name)
        skip = {"__name__", "__spec__", "__loader__", "__file__", "__cached__"}
        mod.__dict__.update({k: v for k, v in vars(parent).items() if k not in skip})
        mod.__file__ = path
        mod.__package__ = getattr(parent, "__package__", None)
        sys.modules[name] = mod
        exec(compile(tree, path, "exec"), mod.__dict__)
        obj = _jit_function(mod, kernel)
        if obj is not None and obj.fn.__code__.co_filename == path:
            return obj
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the variant {path}")
    mod = importlib.util.module_from_spec(spec)
    mod.__package__ = getattr(parent, "__package__", None)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    obj = _jit_function(mod, kernel)
    if obj is None:
        raise ImportError(f"the variant {path} defines no {kernel}")
    return obj


def _jit_function(mod: Any, kernel: str) -> Any:
    """``mod.<kernel>`` unwrapped from autotune/heuristics to its JIT function, or None."""
    from triton.runtime.jit import JITFunction

    kinds: tuple[type, ...] = (JITFunction,)
    try:
        from triton.runtime.interpreter import InterpretedFunction

        kinds += (InterpretedFunction,)
    except ImportError:
        pass
    obj = getattr(mod, kernel, None)
    while obj is not None and not isinstance(obj, kinds):  # autotune / heuristics wrappers
        obj = getattr(obj, "fn", None)
    return obj


#: Decorators (last dotted part) that make a function a Triton kernel or wrap one.
_TRITON_DECORATORS = {"jit", "autotune", "heuristics"}


def _variant_statement(node: Any) -> bool:
    """Whether a top-level statement of a variant file runs when the variant is loaded:
    imports, ``_argus``/``_ARGUS`` assignments, classes and calls, ``if`` blocks on ``_argus``
    names made of those (a transform's prelude), and Triton functions (see
    :func:`load_variant`)."""
    import ast

    if isinstance(node, ast.Import | ast.ImportFrom):
        return True
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return all(isinstance(t, ast.Name) and t.id.lower().startswith("_argus")
                   for t in targets)
    if isinstance(node, ast.ClassDef):
        return node.name.lower().startswith("_argus")
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        # a call on an _argus name: the Proton prelude's enable_semantic("triton")
        root = node.value.func
        while isinstance(root, ast.Attribute):
            root = root.value
        return isinstance(root, ast.Name) and root.id.lower().startswith("_argus")
    if isinstance(node, ast.If):
        # an _argus prelude that differs under the interpreter: every branch is such
        # statements (a program's own `if` blocks are not run again)
        names = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
        return (bool(names) and all(n.lower().startswith("_argus") for n in names)
                and all(_variant_statement(n) for n in [*node.body, *node.orelse]))
    if isinstance(node, ast.FunctionDef):
        for d in node.decorator_list:
            f = d.func if isinstance(d, ast.Call) else d
            last = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if last in _TRITON_DECORATORS:
                return True
    return False


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

    def wrap(cls: Any) -> None:
        orig = cls.run

        def run(self: Any, *args: Any, grid: Any = None, warmup: bool = False,
                **kwargs: Any) -> Any:
            if warmup or not st.is_target(self):
                return orig(self, *args, grid=grid, warmup=warmup, **kwargs)
            return st.launch(self, orig, args, grid, kwargs)

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
    if spec.get("mode") == "time":
        from argusdb.observe.runner.gpu_tools import Activity

        st.activity = Activity()
        st.activity.start()
    atexit.register(st.finish)
    return st


def install_from_env() -> None:
    """The bootstrap's entry: install when ``ARGUS_LAUNCH_SPEC`` is set; report, never raise."""
    spec = os.environ.get(SPEC_ENV)
    if not spec:
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
