"""A program that captures its kernel into a CUDA graph and replays it (a serving decode loop).

``tests/data/programs/graphed`` warms a SwiGLU kernel up on a side stream (3 launches),
captures one step into a ``torch.cuda.CUDAGraph`` and replays it 40 times: after the capture
the kernel runs only as a node of the graph, with no Python launch the hooks could see. Its
observation on the H200 (``tools/h200/observe_programs.sh .whl OUT
tools/h200/programs_graphed.txt``) is in ``tests/data/gpu/programs/graphed/``. Before graphs
were handled, that run failed twice: CUPTI saw 43 launches where the hooks saw 4, and the
variant check ran inside the capture and invalidated it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from argusdb.observe.launch.hooks import State
from argusdb.observe.runner.command import CommandFailed, discovery
from argusdb.store import open_store
from tests.runner.replay import SIGNALS, replay_observe

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "data" / "programs" / "graphed"
RECORDED = ROOT / "tests" / "data" / "gpu" / "programs" / "graphed"
PARENT = "e3bd490e2c3f2d9b57cf6770f86ba6f9b80d6f9d8748eb6377b66862ae2bf2d5"
VARIANT = "99c871f82577529c7c4d382b002d754770a72efc1428cc75c1ccf05dac0dfcdc"


def _launch(task: str) -> dict[str, Any]:
    return dict(json.loads(next((RECORDED / task).glob("launch.*.json")).read_text()))


def _records(task: str) -> list[dict[str, Any]]:
    """Every CUPTI record of the timing run: the evidence file and the ones kept apart."""
    out = []
    for f in sorted((RECORDED / task).glob("*.jsonl")):
        out += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return out


def _state(doc: dict[str, Any], **spec: Any) -> State:
    st = State({"kernel": "swiglu_kernel", "program": "swiglu", "out": "/nonexistent",
                **spec})
    st.launches = [dict(x) for x in doc["launches"]]
    st.binaries = doc["binaries"]
    return st


def test_discovery_measures_a_launch_before_the_capture() -> None:
    d = discovery(_launch("find_launch"), 5)
    # 3 launches of their own, then the captured one: the 3rd is measured, and ncu (which
    # counts kernels as they run: the 3 warm-ups, then each replay's node) skips 2
    assert d["launches"] == {"total": 4, "program": 4, "captured": 1, "autotune": 0,
                             "of_binary": 3}
    assert d["measure_index"] == 2 and d["ncu_launch_skip"] == 2


def test_a_kernel_launched_only_under_capture_is_refused_with_the_way_out() -> None:
    doc = _launch("find_launch")
    doc["launches"] = [x | {"captured": True} for x in doc["launches"]]
    with pytest.raises(CommandFailed, match=r"not launched on its own before the program "
                       r"captured it into a CUDA graph.*warm-up on a side stream"):
        discovery(doc, 5)


@pytest.mark.parametrize("task, binary, apart", [("cupti_timing.parent", PARENT, 2),
                                                 ("cupti_timing.forced_wait", VARIANT, 3)])
def test_graph_replays_are_timed_as_the_captured_binary(task: str, binary: str, apart: int,
                                                        tmp_path: Path) -> None:
    """The recorded CUPTI records split again by this code: the 40 replays' records (a
    ``graph_id``) take the captured launch's binary, the others pair with the hooks' own
    launches in order; the first two launches of the binary are warm-up, the variant run's
    check launch of the parent is kept apart too."""
    doc = _launch(task)
    recs = _records(task)
    st = _state(doc, warmup=2)
    st.out = tmp_path
    pairs = st.match_timing(recs)
    assert pairs is not None and not st.errors
    graph = [launch for r, launch in pairs if r["graph_id"]]
    assert len(graph) == 40 and all(x["captured"] and x["binary"] == binary for x in graph)
    assert [r["start"] for r, _ in pairs] == sorted(r["start"] for r, _ in pairs)
    files = st.split_timing(recs, binary, 1)
    assert st.timing == {"of_binary": 43, "kept": 41, "graph_executions": 40, "apart": apart}
    timed = [json.loads(line) for line in (tmp_path / files[0]).read_text().splitlines()]
    kept = [r for r in timed if r.get("name") == "swiglu_kernel"]
    assert len(kept) == 41 and sum(1 for r in kept if r["graph_id"]) == 40
    # what the H200 run's result said, from the same split
    res = json.loads((RECORDED / task / "result.json").read_text())
    assert (res["launches_kept"], res["launches_apart"]) == (41, apart)


def test_graph_records_that_cannot_be_told_apart_fail_the_task() -> None:
    doc = _launch("cupti_timing.parent")
    recs = _records("cupti_timing.parent")
    # two binaries captured: which node is which cannot be told from the records
    two = doc | {"launches": doc["launches"] + [doc["launches"][-1] | {"binary": VARIANT}]}
    two["binaries"] = doc["binaries"] | {VARIANT: doc["binaries"][PARENT]}
    st = _state(two)
    assert st.match_timing(recs) is None
    assert "captured into CUDA graphs as 2 binaries" in st.errors[0]
    # replays with no captured launch: a graph built before the hooks
    st = _state(doc | {"launches": [x for x in doc["launches"] if not x.get("captured")]})
    assert st.match_timing(recs) is None and "binary is unknown" in st.errors[0]
    # the launches of their own must still pair one to one
    st = _state(doc | {"launches": doc["launches"][1:]})
    assert st.match_timing(recs) is None
    assert "CUPTI saw 3 launches of swiglu_kernel outside CUDA graphs, the hook 2" in \
        st.errors[0]


def test_a_variant_never_checked_outside_a_capture_is_an_error(tmp_path: Path) -> None:
    doc = _launch("cupti_timing.forced_wait")
    st = _state(doc, variant=str(tmp_path / "v.py"), check_index=5)
    st.out = tmp_path
    st.launches = [x for x in doc["launches"] if x["role"] == "program"]
    st.finish()
    (rec,) = [json.loads(p.read_text()) for p in tmp_path.glob("launch.*.json")]
    assert rec["variant_check"] is None
    assert "a check cannot run inside a capture" in rec["errors"][0]


def test_replayed_observation_is_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                       ) -> None:
    code, rep = replay_observe(tmp_path, monkeypatch, "graphed", "swiglu/swiglu_kernel/load",
                               SIGNALS, "python3", "decode.py")
    assert code == 0 and rep["ok"], rep["failed"]
    assert [t["status"] for t in rep["tasks"]] == ["done"] * 9  # with proton_instr
    for sig in ("inst_executed", "warp_stall_samples"):
        v = rep["attribution"][sig]
        assert v["verdict"] == "sufficient" and v["attributed"] == v["observed"] > 0
    with open_store(tmp_path / "s.duckdb", read_only=True) as st:
        timing = st.rows(
            "SELECT r.program_version, count(*) AS n, count(*) FILTER (WHERE "
            "k.launch_api = 'cudaGraphLaunch') AS graph FROM evidence e JOIN run r "
            "USING (run_id) LEFT JOIN kernel_launch k ON k.run_id = e.run_id "
            "AND k.launch = e.launch AND k.kernel = e.kernel WHERE e.signal = 'duration' "
            "AND e.kernel = 'swiglu_kernel' AND r.timing_clean GROUP BY ALL")
        checks = st.rows("SELECT v.transform, c.rel_err FROM variant_check c JOIN "
                         "program_version v ON v.program_version = c.variant_version "
                         "ORDER BY 1")
    # each version: the measured warm-up launch and the 40 replays, the variant checked
    assert sorted((x["n"], x["graph"]) for x in timing) == [(41, 40), (41, 40)]
    # both variants (the forced wait, the Proton scopes) checked before the capture
    assert checks == [{"transform": "forced_wait:swiglu/swiglu_kernel/load", "rel_err": 0.0},
                      {"transform": "proton_scopes:swiglu/swiglu_kernel/load", "rel_err": 0.0}]
