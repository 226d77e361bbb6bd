"""The hooks' torch.compile concern: the launches Inductor's launcher made, in the launch record.

:func:`argusdb.observe.launch.inductor.install` calls :meth:`CompiledLaunches.launch` for
every launch of a compiled binary that did not come through ``JITFunction.run``. A launch of
the user's kernel (Inductor's copy of its source, :func:`~.inductor.classify`) is recorded as
a launch of the target, with its binary (hash, warps, stages, constexprs from the binary's
source), as the program launched it; its arguments are captured for the replay like an eager
launch's (they are the compiled program's buffers). Inductor's own kernels are counted by
name and binary as the program's neighbours. A kernel that holds the user's function inlined
(Inductor's copy calls it as a helper), or that has the user's name but another source
(an epilogue fused in), is named in the record, so that a run that never launched the user's
kernel itself says which kernel holds it.

Example:
    >>> CompiledLaunches.__name__
    'CompiledLaunches'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from argusdb.observe.launch import inductor
from argusdb.observe.launch.binary import _plain, binary_hash, binary_info, capturing

#: Launch options of a compiled binary that a replay passes again (with the constexprs), so
#: that the user's source compiles with the options Inductor compiled its copy with.
OPTIONS = ("num_warps", "num_stages", "num_ctas", "debug", "sanitize_overflow",
           "enable_fp_fusion", "enable_reflect_ftz", "launch_cooperative_grid", "launch_pdl")


class CompiledLaunches:
    """What the hooks saw of the compiled program's launches (see the module docstring)."""

    def __init__(self, state: Any) -> None:
        self.st = state
        self.seen = 0
        self.kinds: dict[str, str] = {}
        self.copies: dict[str, dict[str, Any]] = {}
        self.neighbours: dict[str, dict[str, Any]] = {}
        self.inlined: list[dict[str, Any]] = []
        self.modified: list[dict[str, Any]] = []
        self.user: Any = None
        self.user_file: str | None = None
        self.compiled_name: str | None = None

    # -- which kernel ------------------------------------------------------------------
    def _user(self) -> Any:
        if self.user is None:
            self.user = inductor.find_user_kernel(self.st.program, self.st.kernel)
            if self.user is not None:
                self.user_file = inductor.source_lines(self.user)[0]
        return self.user

    def _classify(self, kernel: Any, fn: Any, name: str, h: str) -> str:
        user = self._user()
        user_src = inductor.src_text(user) if user is not None else None
        src = inductor.src_text(fn)
        copy_file, copy_def, n = inductor.source_lines(fn)
        kind = inductor.classify(name, src, copy_file, self.st.kernel, user_src, self.user_file)
        if kind == "user" and user is not None:
            _, user_def, _ = inductor.source_lines(user)
            self.copies[h] = {"file": copy_file, "name": name,
                              **({"line_map": inductor.line_map(copy_def, user_def, n)}
                                 if copy_def is not None and user_def is not None else {})}
            if name != self.st.kernel:  # Inductor renamed it: CUPTI sees the new name
                self.compiled_name = self.st.timer.kernel = name
        elif kind == "user_modified" and src is not None and user_src is not None:
            self.modified.append({"kernel": name, "binary": h, "file": copy_file,
                                  "difference": inductor.source_difference(src, user_src)})
        elif user_src is not None:
            helper = (getattr(fn, "__globals__", None) or {}).get(self.st.kernel)
            hsrc = inductor.src_text(helper) if helper is not None else None
            if hsrc is not None and inductor.classify(self.st.kernel, hsrc, None,
                                                      self.st.kernel, user_src,
                                                      None) == "user":
                self.inlined.append({"kernel": name, "binary": h, "file": copy_file})
        self.kinds[h] = kind
        return kind

    # -- a launch ----------------------------------------------------------------------
    def launch(self, kernel: Any, grid: Any, args: tuple[Any, ...]) -> None:
        """One launch of a compiled binary by Inductor's launcher (before it runs)."""
        import time

        self.seen += 1
        fn = getattr(getattr(kernel, "src", None), "fn", None)
        name = str(getattr(fn, "__name__", None) or getattr(kernel, "name", "?"))
        h = binary_hash(kernel)
        kind = self.kinds.get(h) or self._classify(kernel, fn, name, h)
        if kind != "user":
            n = self.neighbours.setdefault(name, {"kind": kind, "launches": 0, "binaries": []})
            n["launches"] += 1
            if h not in n["binaries"]:
                n["binaries"].append(h)
            return
        st = self.st
        role = "autotune" if inductor.benchmarking() else "program"
        captured = capturing()
        lined = inductor.arguments(fn, args, getattr(kernel.src, "constants", {}) or {})
        consts = {k: _plain(v) for k, v in (lined[1] if lined else {}).items()}
        md = getattr(kernel, "metadata", None)
        opts = {k: _plain(getattr(md, k)) for k in OPTIONS
                if getattr(md, k, None) is not None}
        snap = None
        if (st.capture is not None and role == "program" and not captured
                and st.capture.wants(h)):
            if lined is None:
                st.errors.append(f"Inductor's launch of {name} passed {len(args)} arguments "
                                 f"that do not line up with its parameters "
                                 f"{list(getattr(fn, 'arg_names', []))}: not captured")
            else:
                pos, rest = _positional(lined[0], list(getattr(fn, "arg_names", [])))
                snap = st.capture.before(fn, tuple(v for _, v in pos),
                                         {**dict(rest), **consts, **opts},
                                         [int(g) for g in grid])
        t0 = time.perf_counter_ns()
        with st.lock:
            if h not in st.binaries:
                info = binary_info(fn, kernel, (), {}, consts)
                info.update({"launcher": "inductor", "options": opts,
                             "ptxas": inductor.env_record().get(inductor.PTXAS_ENV),
                             **{k: v for k, v in self.copies.get(h, {}).items()
                                if k in ("file", "line_map")}})
                if info.get("file"):
                    info["compiled_from"] = info.pop("file")
                st.binaries[h] = info
                st.compiled[h] = kernel
            st.launches.append({"i": len(st.launches), "role": role, "binary": h,
                                "t_ns": t0, "launcher": "inductor",
                                **({"captured": True} if captured else {})})
        if st.module_file is None and self.user_file:
            st.module_file = self.user_file
        if st.capture is not None and role == "program":
            last = st.launches[-1]
            st.capture.after(snap, h, last["i"], captured)
            if snap is not None and snap.storages:
                st.copied.add(last["i"])

    # -- at exit -----------------------------------------------------------------------
    def map_files(self, chosen: str | None, files: list[str]) -> list[str]:
        """Move the source locations of the chosen binary's saved TTGIR/PTX/SASS from
        Inductor's copy to the user's file (in place) and save the copy's source beside them
        (returned, to be listed); nothing for a binary that is not a compiled copy."""
        copy = self.copies.get(chosen or "")
        if not copy or not copy.get("line_map") or not self.user_file:
            return []
        out = self.st.out
        for f in files:
            p = out / f
            if p.suffix in (".ttgir", ".ptx", ".sass") and p.exists():
                p.write_text(inductor.map_locations(p.read_text(), copy["file"],
                                                    self.user_file, copy["line_map"]))
        src = Path(copy["file"])
        if not src.exists():
            return []
        name = f"inductor_kernel.{chosen}.py"
        (out / name).write_text(src.read_text())
        return [name]

    def write_capture(self, chosen: str | None, folder: Path) -> None:
        """Beside a capture of a compiled binary, its PTX (the replay compares its own
        binary's with it: :func:`~.inductor.ptx_difference`)."""
        kernel = self.st.compiled.get(chosen or "")
        asm = getattr(kernel, "asm", None) or {}
        if chosen in self.copies and "ptx" in asm:
            (folder / "binary.ptx").write_text(asm["ptx"])

    def finish_errors(self) -> list[str]:
        """Errors of a variant run whose kernel only Inductor launched (the variant cannot be
        put in place of Inductor's launch: it runs on the replay of the captured launch)."""
        st = self.st
        ours = [x for x in st.launches if x.get("launcher") == "inductor"]
        if st.is_variant and ours and st.check is None:
            return [f"{st.kernel} was launched only by torch.compile (Inductor's copy of its "
                    "source, its own launcher): a variant is not put in place of those "
                    "launches in the program; it runs on the replay of the captured launch "
                    "(observe without --no-replay, with a capture the control run could "
                    "take)"]
        return []

    def record(self) -> dict[str, Any]:
        """The launch record's ``inductor`` part."""
        return {"compiled_launches": self.seen,
                "user_kernel_binaries": sorted(h for h, k in self.kinds.items() if k == "user"),
                "copies": self.copies, "neighbours": self.neighbours,
                "inlined_into": self.inlined, "modified": self.modified,
                "compiled_name": self.compiled_name, "env": inductor.env_record()}


def _positional(pairs: list[tuple[str, Any]], names: list[str]
                ) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
    """The runtime arguments a replay passes by position (those that lead the signature in
    order, up to its first constexpr) and those it passes by name."""
    pos: list[tuple[str, Any]] = []
    for k, (n, v) in enumerate(pairs):
        if k < len(names) and names[k] == n:
            pos.append((n, v))
        else:
            return pos, pairs[k:]
    return pos, []


def unseen_reason(docs: list[dict[str, Any]], kernel: str) -> str | None:
    """Why a run whose processes loaded torch.compile never launched ``kernel`` itself, from
    their launch records' ``inductor`` parts (None where no process loaded Inductor)."""
    parts = [d["inductor"] for d in docs if d.get("inductor")]
    if not parts and not any(d.get("inductor_loaded") for d in docs):
        return None
    inlined = [x for p in parts for x in p.get("inlined_into", [])]
    modified = [x for p in parts for x in p.get("modified", [])]
    if inlined:
        x = inlined[0]
        return (f"torch.compile inlined {kernel} into the kernel {x['kernel']} (binary "
                f"{x['binary']}, Inductor's copy of the source {x['file']} calls it): no launch "
                f"of {kernel} exists in the compiled program, and its lines are measured only as "
                f"part of {x['kernel']}; observe a region of that kernel, or an eager run "
                "(argus observe ... -- env TORCHDYNAMO_DISABLE=1 COMMAND)")
    if modified:
        x = modified[0]
        return (f"torch.compile launched {x['kernel']} (binary {x['binary']}, compiled from "
                f"{x['file']}), whose source is not {kernel}'s: {x['difference']} (Inductor "
                "fused other code into it, or compiled another version of the file); its "
                "binary is not the user's source, so no region of it is attributed; observe "
                "an eager run (argus observe ... -- env TORCHDYNAMO_DISABLE=1 COMMAND)")
    names = sorted({n for p in parts for n in p.get("neighbours", {})})
    seen = sum(int(p.get("compiled_launches", 0)) for p in parts)
    return (f"torch.compile (Inductor) was loaded and its launcher made {seen} launch(es) of "
            f"{len(names)} kernel(s) ({', '.join(names[:6]) or 'none'}"
            f"{', ...' if len(names) > 6 else ''}), none of {kernel} or of a kernel that holds "
            "it: the compiled region does not call it, or the kernel was compiled before the "
            "hooks were installed (a cache of compiled graphs from another run)")
