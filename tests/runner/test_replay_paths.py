"""One program run + replays against per-run collection, on the same binary, recorded on the H200.

``tools/h200/observe_replay.sh`` observed tests/data/programs/model (fused_norm/layernorm_fwd/
load; duration, inst_executed, warp_stall_samples, exposed_latency) from an installed wheel,
with replay (the default) and with --no-replay; each task's folder is in
``tests/data/gpu/replay/model.<mode>/``. Here both are replayed into stores of their own.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from argusdb.api import connect
from argusdb.cli import main
from argusdb.store import open_store

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests" / "data" / "gpu" / "replay"
PROGRAM = ROOT / "tests" / "data" / "programs" / "model"
REGION = "fused_norm/layernorm_fwd/load"
SIGNALS = "duration,inst_executed,warp_stall_samples,exposed_latency"


def observe(tmp: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> tuple[dict[str, Any], Path]:
    bundle = tmp / mode
    shutil.copytree(RECORDED / f"model.{mode}", bundle)
    monkeypatch.chdir(PROGRAM)
    monkeypatch.setenv("ARGUS_REPLAY", str(bundle))
    store = tmp / f"{mode}.duckdb"
    flags = ["--no-replay"] if mode == "no-replay" else []
    r = CliRunner().invoke(main, ["observe", "--region", REGION, "--signals", SIGNALS,
                                  "--store", str(store), "--json", *flags, "--", "python3",
                                  "model.py"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout.splitlines()[-1]), store


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict[str, Any], Path]]:
    tmp = tmp_path_factory.mktemp("paths")
    with pytest.MonkeyPatch.context() as mp:
        return {m: observe(tmp, mp, m) for m in ("replay", "no-replay")}


def test_replay_runs_the_program_once(both: dict[str, tuple[dict[str, Any], Path]]) -> None:
    rep, _ = both["replay"]
    assert rep["ok"] and rep["replay"]["program_runs"] == 1 and rep["replay"]["fallbacks"] == {}
    assert [t["id"].split(".", 1)[1] for t in rep["tasks"] if t["runs_program"]] == [
        "find_launch"]
    per_run, _ = both["no-replay"]
    assert per_run["replay"]["program_runs"] == 5 and not per_run["replay"]["planned"]


def test_exactness_is_unchanged_and_the_split_is_the_per_run_path_s(
        both: dict[str, tuple[dict[str, Any], Path]]) -> None:
    splits = {}
    for mode, (rep, store) in both.items():
        v = rep["attribution"]["inst_executed"]
        assert v["verdict"] == "sufficient" and v["unattributed_share"] == 0.0
        assert v["attributed"] == v["observed"] == 3014656
        with open_store(store, read_only=True) as st:
            splits[mode] = st.rows(
                "SELECT region_id, sum(value) AS v FROM region_attribution WHERE signal = "
                "'inst_executed' GROUP BY region_id ORDER BY region_id")
    assert splits["replay"] == splits["no-replay"] and len(splits["replay"]) > 1


def test_replayed_timing_has_a_standing_of_its_own(
        both: dict[str, tuple[dict[str, Any], Path]]) -> None:
    rep, store = both["replay"]
    durations = rep["replay"]["durations"]
    assert sorted(durations.values()) == [
        "in-context (the program's launches)",
        "replay (the captured launch, isolated: launch_replay)",
        "replay (the captured launch, isolated: launch_replay)"]
    with open_store(store, read_only=True) as st:
        runs = st.rows("SELECT r.signature, r.launch_replay, r.timing_clean, count(*) AS n "
                       "FROM evidence e JOIN run r USING (run_id) WHERE e.signal = 'duration' "
                       "AND e.kernel = 'layernorm_fwd' AND r.collector = 'cupti' "
                       "GROUP BY ALL ORDER BY 1")
        derived = st.rows("SELECT value, conditions FROM derived_evidence WHERE signal = "
                          "'exposed_latency'")
    # the program's own launches (in context), the parent's and the variant's 21 replays
    assert [(r["signature"], r["launch_replay"], r["timing_clean"]) for r in runs] == [
        ("activity_tracing", False, True),
        ("launch_replay+activity_tracing+cache:all", True, False)]
    assert runs[1]["n"] == 42
    (d,) = derived
    cond = json.loads(d["conditions"])
    # replayed variant minus replayed parent, both isolated (L2 flushed, inputs restored)
    assert cond["signature"] == "launch_replay+activity_tracing+cache:all"
    assert d["value"] == cond["variant_median_ns"] - cond["parent_median_ns"]
    with connect(store, read_only=True) as db:
        mixed = db.check("SELECT e.region_id, median(e.value) FROM evidence e JOIN run r USING "
                         "(run_id) WHERE e.signal = 'duration' AND r.activity_tracing AND NOT "
                         "r.instrumentation GROUP BY e.region_id, e.program_version")
        apart = db.check("SELECT e.region_id, r.signature, median(e.value) FROM evidence e "
                         "JOIN run r USING (run_id) WHERE e.signal = 'duration' GROUP BY "
                         "e.region_id, e.program_version, r.signature")
    assert [f.code for f in mixed] == ["AR02"]
    assert "launch_replay" in str(mixed[0])
    assert not [f for f in apart if f.code == "AR02"]
