"""The launch hooks' Proton concern: instrumentation of one launch, PC sampling of some.

One small class per session kind, as Proton's own hooks keep a class per concern: the hooks'
:class:`~argusdb.observe.launch.hooks.State` asks them to open, wrap a launch and finish, and
reads back the files they wrote (``instr.chrome_trace``, ``pcs.hatchet``). The replay worker
(:mod:`argusdb.observe.runner.replay`) uses the same classes around its replayed launches.

Example:
    >>> s = PcSampling(Path("out"), "softmax_fwd", sample_from=5, launches=2)
    >>> s.wants(settled=5)
    True
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def _finish(out: Path, name: str, output_format: str, files: list[str]) -> None:
    """Wait for the session's launches and write its file ``name``."""
    import torch
    import triton.profiler as proton

    torch.cuda.synchronize()
    proton.finalize(output_format=output_format)
    files.append(name)
    del out


class Instrumentation:
    """Proton's instrumentation session around one launch of a ``proton_scopes`` variant.

    The variant's scopes record per-CTA, per-warp events only in a binary compiled while a
    session is active (Triton compiles that launch again, with the instrumentation), and no
    other launch is instrumented."""

    def __init__(self, out: Path) -> None:
        self.out = out
        #: files written (``instr.chrome_trace``)
        self.files: list[str] = []

    def around(self, launch: Callable[[], Any]) -> Any:
        """Run ``launch`` inside a fresh instrumentation session and write its trace."""
        import triton.profiler as proton

        self.out.mkdir(parents=True, exist_ok=True)
        proton.start(str(self.out / "instr"), backend="instrumentation", data="trace")
        kernel = launch()
        _finish(self.out, "instr.chrome_trace", "chrome_trace", self.files)
        return kernel


class PcSampling:
    """Proton's PC sampling of ``launches`` launches of the target from its ``sample_from``-th.

    PC sampling maps a sample to its source line only for a module loaded while the session
    exists (seen on the H200: a session started after the kernel's first launch gave samples
    without lines), and the target's module loads at its first launch, which compiles it. The
    session is therefore opened inactive before the first launch and is active only around the
    sampled launches, each under a scope named after the kernel."""

    def __init__(self, out: Path, kernel: str, sample_from: int, launches: int) -> None:
        self.out, self.kernel = out, kernel
        self.sample_from, self.launches = sample_from, launches
        self.session: Any = None
        #: launches (``i`` of the hooks' records) made inside the session
        self.sampled: list[int] = []
        self.files: list[str] = []

    def open(self) -> None:
        """Start the session, inactive (once)."""
        if self.session is not None:
            return
        import triton.profiler as proton

        self.out.mkdir(parents=True, exist_ok=True)
        self.session = proton.start(str(self.out / "pcs"), mode="pcsampling")
        proton.deactivate(self.session)

    def wants(self, settled: int) -> bool:
        """Whether the next program launch (``settled`` program launches before it) is sampled."""
        return settled >= self.sample_from and len(self.sampled) < self.launches

    def sample(self, launch: Callable[[], Any]) -> Any:
        """One launch with the session active; it waits for the launch before the session goes
        inactive again, so no sample of it is lost and none of other launches is taken."""
        import torch
        import triton.profiler as proton

        proton.activate(self.session)
        try:
            with proton.scope(self.kernel):
                return launch()
        finally:
            torch.cuda.synchronize()
            proton.deactivate(self.session)

    def took(self, index: int) -> None:
        """Record a sampled launch; write the samples once enough were taken."""
        self.sampled.append(index)
        if len(self.sampled) >= self.launches:
            _finish(self.out, "pcs.hatchet", "hatchet", self.files)

    def close(self, errors: list[str]) -> None:
        """At exit: write the samples of fewer launches than asked, if any were taken."""
        if self.sampled and not self.files:
            try:
                _finish(self.out, "pcs.hatchet", "hatchet", self.files)
            except Exception as exc:
                errors.append(f"Proton's PC-sampling session could not be finished: {exc!r}")
