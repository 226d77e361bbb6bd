from __future__ import annotations

import statistics
from pathlib import Path

import pyarrow as pa
import pytest

from argusdb.collectors import detect
from argusdb.errors import InputError
from tests.conftest import DATA, DEMO

JSONL = DEMO / "softmax" / "softmax.cupti.jsonl"


def test_reads_kernel_records_as_durations() -> None:
    art = detect(JSONL).read(JSONL)
    assert art.collector == "cupti" and art.interference.timing_clean()
    batches = list(art.batches())
    ev = pa.Table.from_batches([b for t, b in batches if t == "evidence"])
    kl = pa.Table.from_batches([b for t, b in batches if t == "kernel_launch"])
    assert ev.schema.field("value").type == pa.float64()
    assert kl.schema.field("dur_ns").type == pa.int64()
    soft = [v for k, v in zip(ev["kernel"].to_pylist(), ev["value"].to_pylist(), strict=True)
            if k == "softmax_fwd"]
    assert len(soft) == 20
    # The recording's README: softmax median 32.6 µs over 20 launches.
    assert statistics.median(soft) == pytest.approx(32_544, rel=0.01)
    launches = [r for r in kl.to_pylist() if r["kernel"] == "softmax_fwd"]
    assert [r["launch"] for r in launches] == list(range(20))
    assert launches[0]["grid_x"] == 16384 and launches[0]["block_x"] == 128


def test_truncated_record_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "cut.cupti.jsonl"
    bad.write_text(JSONL.read_text()[:-40])
    with pytest.raises(InputError, match="not a JSON record"):
        list(detect(bad).read(bad).batches())


def test_the_launching_runtime_call_is_stored_with_its_time_thread_and_line() -> None:
    import json

    path = DATA / "gpu" / "programs" / "model" / "cupti_timing.parent" / "timing.638.cupti.jsonl"
    art = detect(path).read(path)
    kl = pa.Table.from_batches([b for t, b in art.batches() if t == "kernel_launch"]).to_pylist()
    # Oracle: the file's own records, read with json.
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    calls = {r["correlation_id"]: (i, r) for i, r in enumerate(recs) if r["kind"] == "RUNTIME"}
    linked = [k for k in kl if k["api_src_row"] is not None]
    # 135 of the 163 kernels were launched by a recorded runtime call (the rest by driver calls
    # that runtime-only tracing did not record: their columns stay NULL)
    assert len(kl) == 163 and len(linked) == 135
    for k in kl:
        if k["correlation_id"] not in calls:
            assert k["launch_api"] is None and k["api_start_ns"] is None
            continue
        i, call = calls[k["correlation_id"]]
        assert k["api_src_row"] == i
        assert (k["api_start_ns"], k["api_dur_ns"]) == (call["start"], call["end"] - call["start"])
        assert (k["api_pid"], k["api_tid"]) == (call["process_id"], call["thread_id"])
        assert k["launch_api"] == {211: "cudaLaunchKernel", 430: "cudaLaunchKernelExC"}[
            call["cbid"]]
        assert call["start"] < k["start_ns"]
