"""Capture of the measured launch and its replay, on a CPU under TRITON_INTERPRET=1.

The program (tests/data/programs/inplace) steps an in-place AXPY, y += 0.5 * x, where x and y
are two halves of one buffer: the kernel writes its input, and its two tensor arguments alias
one storage. Its state after k launches is known: y_k = y_0 + 0.5 * k * x.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from argusdb.collectors.regions import ProgramSource
from argusdb.observe.launch import command_env, read_launches, write_spec
from argusdb.observe.launch.capture import limit_bytes, load, pointer_table, snapshot
from argusdb.observe.transforms import apply

torch = pytest.importorskip("torch")
pytest.importorskip("triton")



@pytest.fixture(autouse=True)
def interpret(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernels the worker loads in this process run under Triton's interpreter (read when a
    kernel is decorated)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")


PROGRAM = Path(__file__).resolve().parents[1] / "data" / "programs" / "inplace"
N = 128


def control_run(tmp_path: Path, warmup: int = 5, limit: int = 1 << 30,
                **spec: Any) -> dict[str, Any]:
    out = tmp_path / "find_launch"
    doc = {"out": str(out), "mode": "discover", "kernel": "axpy_kernel",
           "program": "axpy_ops", "capture": {"warmup": warmup, "limit_bytes": limit}, **spec}
    env = command_env(write_spec(tmp_path / "spec.json", doc),
                      {**os.environ, "TRITON_INTERPRET": "1"})
    p = subprocess.run([sys.executable, "run.py", "--n", str(N)], cwd=PROGRAM, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    (rec,) = [d for d in read_launches(out) if d.get("launches")]
    return rec


def test_the_measured_launch_is_captured_with_its_aliasing(tmp_path: Path) -> None:
    rec = control_run(tmp_path)
    cap = rec["capture"]
    assert cap["ok"] and cap["launch"] == 5 and cap["storages"] == 1
    doc = json.loads((tmp_path / "find_launch" / "capture" / "launch.json").read_text())
    x, y, n, alpha = doc["args"]
    # both halves of the one buffer: one storage, 2 * N floats, y N floats in
    assert x["storage"] == y["storage"] == 0 and doc["storages"][0]["bytes"] == 2 * N * 4
    assert (x["offset_bytes"], y["offset_bytes"]) == (0, N * 4)
    assert (n, alpha) == ({"kind": "value", "value": N, "name": "n"},
                          {"kind": "value", "value": 0.5, "name": "alpha"})
    assert doc["kwargs"]["BLOCK"] == {"kind": "value", "value": 64}
    assert doc["grid"] == [2, 1, 1] and doc["binary"] == rec["chosen_binary"]


def test_restore_replays_an_in_place_kernel_on_the_captured_inputs(tmp_path: Path) -> None:
    from argusdb.observe.runner.replay import Replayer, run_job

    control_run(tmp_path)
    folder = tmp_path / "find_launch" / "capture"
    job = {"action": "plain", "capture": str(folder), "kernel": "axpy_kernel",
           "module_file": str(PROGRAM / "axpy_ops.py"), "out": str(tmp_path / "plain")}
    rep = Replayer(job)
    x, y = rep.cap.args[0], rep.cap.args[1]
    assert x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()  # still aliased
    x0 = torch.arange(N, dtype=torch.float32)
    y0 = torch.arange(N, 2 * N, dtype=torch.float32)
    assert torch.equal(y, y0 + 5 * 0.5 * x0)  # the inputs of the program's 6th launch
    for _ in range(3):  # each replay starts from the captured bytes again
        rep.launch(rep.parent)
        assert torch.equal(y, y0 + 6 * 0.5 * x0) and torch.equal(x, x0)
    res = run_job(job, {})
    assert res["binary"] == json.loads((folder / "launch.json").read_text())["binary"]
    assert json.loads((tmp_path / "plain" / "result.json").read_text())["replayed"] is True


def test_a_variant_is_checked_against_the_parent_on_restored_inputs(tmp_path: Path) -> None:
    from argusdb.observe.runner.replay import Replayer, load_kernel

    control_run(tmp_path)
    src = ProgramSource.from_path(PROGRAM / "axpy_ops.py")
    fw = apply("forced_wait", src, {"region_id": "axpy_ops/axpy_kernel/load"}).source
    good = tmp_path / "fw" / "axpy_ops.py"
    good.parent.mkdir()
    good.write_text(fw.text)
    bad = tmp_path / "bad" / "axpy_ops.py"
    bad.parent.mkdir()
    bad.write_text(src.text.replace("y + alpha * x", "y + 2.0 * alpha * x"))
    rep = Replayer({"capture": str(tmp_path / "find_launch" / "capture"),
                    "kernel": "axpy_kernel", "module_file": str(PROGRAM / "axpy_ops.py")})
    ok = rep.check(load_kernel(str(good), "axpy_kernel", "argus_test_fw"))
    assert ok["rel_err_vs_parent"] == 0.0 and ok["tensors_written"] == 1
    wrong = rep.check(load_kernel(str(bad), "axpy_kernel", "argus_test_bad"))
    assert wrong["rel_err_vs_parent"] > 1e-3


def test_a_capture_over_the_limit_is_refused_with_its_size(tmp_path: Path) -> None:
    rec = control_run(tmp_path, limit=512)
    assert rec["capture"]["ok"] is False
    assert rec["capture"]["why"] == ("the launch's tensor arguments span 1024 B, over the "
                                     "capture limit of 512 B (--capture-limit)")
    assert not (tmp_path / "find_launch" / "capture").exists()


def test_a_binary_launched_fewer_times_is_captured_at_its_last_launch(tmp_path: Path) -> None:
    rec = control_run(tmp_path, warmup=50)
    assert rec["capture"]["ok"] and rec["capture"]["launch"] == 7  # 8 launches: the last


def test_pointer_tables_and_descriptors_are_refused() -> None:
    a = torch.zeros(16)
    table = torch.tensor([a.data_ptr(), 0], dtype=torch.int64)
    snap = snapshot((a, table), {}, (1,), ["a", "ptrs"], 1 << 20)
    assert snap.refusal is not None and "argument ptrs" in snap.refusal
    assert "pointer table" in snap.refusal
    plain = snapshot((a, torch.tensor([3, 4], dtype=torch.int64)), {}, (1,), ["a", "idx"],
                     1 << 20)
    assert plain.refusal is None and len(plain.storages) == 2

    class TensorDescriptor:
        pass

    desc = snapshot((a, TensorDescriptor()), {}, (1,), ["a", "desc"], 1 << 20)
    assert desc.refusal is not None and "host-built TMA descriptor" in desc.refusal
    assert pointer_table([5], [(0, 10)]) and not pointer_table([10], [(0, 10)])


def test_views_are_rebuilt_with_their_offsets_strides_and_dtype(tmp_path: Path) -> None:
    from argusdb.observe.launch.capture import LaunchCapture

    base = torch.arange(64, dtype=torch.float16)
    t = base.view(8, 8)[1:, ::2]  # offset 8, strides (8, 2)
    i = torch.tensor([7], dtype=torch.int32)
    cap = LaunchCapture(tmp_path, warmup=0, limit=1 << 20)
    snap = snapshot((t, i, 3), {"num_warps": 4}, (1,), ["t", "i", "n"], 1 << 20)
    cap.after(snap, "b", 0, captured=False)
    assert cap.write("b", {})["ok"]
    got = load(tmp_path / "capture")
    rt = got.args[0]
    assert rt.dtype == torch.float16 and rt.stride() == (8, 2) and torch.equal(rt, t)
    assert torch.equal(got.args[1], i) and got.args[2] == 3 and got.kwargs == {"num_warps": 4}
    rt.fill_(0)
    got.restore()
    assert torch.equal(rt, t)


def test_capture_limits_read_units() -> None:
    assert limit_bytes("4G") == 4 << 30 and limit_bytes("512MiB") == 512 << 20
    assert limit_bytes(None) == 4 << 30 and limit_bytes("1000") == 1000


def test_the_in_context_duration_is_printed_from_the_control_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from argusdb.observe.runner.replayed import first_evidence

    f = tmp_path / "timing.1.cupti.jsonl"
    recs = [{"kind": "CONCURRENT_KERNEL", "name": "k", "start": 0, "end": d}
            for d in (7000, 7400, 9000)]
    recs.append({"kind": "CONCURRENT_KERNEL", "name": "other", "start": 0, "end": 1})
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert first_evidence(f, "k") == 7.4
    assert "k in the program: median 7.40 us over 3 launches" in capsys.readouterr().err
