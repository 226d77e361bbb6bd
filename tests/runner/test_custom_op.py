"""A kernel registered as a ``torch.library`` op (``triton_op`` + ``wrap_triton``) in a model
that ``torch.compile`` compiles: ``tests/data/programs/customop``.

Observed on the H200 (``tools/h200/observe_programs.sh .whl OUT
tools/h200/programs_compiled.txt``): compiled, Inductor launches its own copy of the kernel and
the control task fails saying so, with the way out; with ``TORCHDYNAMO_DISABLE=1`` (the same
program, eager) all 7 tasks ran; the replay here runs 9, with the Proton-instrumented launch
recorded since (``tools/h200/programs_proton_bundles.txt``). The forced-wait run is the one that
used to fail: loading the whole variant file registered the op again, and the program's later
launches went to the variant's kernel past the hooks (CUPTI saw 12 launches, the hooks 1); the
loader is tested on the CPU in ``tests/launch/test_hooks.py``, the compiled run's message in
``tests/runner/test_command.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runner.replay import SIGNALS, replay_observe


def test_replayed_eager_observation_is_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    code, rep = replay_observe(tmp_path, monkeypatch, "customop",
                               "scale_add/scale_add_kernel/load", SIGNALS, "env",
                               "TORCHDYNAMO_DISABLE=1", "python3", "model.py")
    assert code == 0 and rep["ok"], rep["failed"]
    assert [t["status"] for t in rep["tasks"]] == ["done"] * 9  # with proton_instr
    for sig in ("inst_executed", "warp_stall_samples"):
        v = rep["attribution"][sig]
        assert v["verdict"] == "sufficient" and v["attributed"] == v["observed"] > 0
    assert rep["evidence"]["exposed_latency"] == {"derived": 1}
