"""Per-rank report, timeline, dashboard section and per-collective diff on the 2-H200
recordings (tests/data/gpu/xlayer), checked against the raw recorder files."""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path

import pytest
from click.testing import CliRunner

from argusdb.cli import main

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "gpu" / "xlayer"
PROGRAM = str(ROOT / "tools" / "h200" / "xlayer" / "tp_block.py")
LAUNCHES = ["xl-serial-events-1", "xl-overlap-events-1", "xl-serial-cupti-1",
            "xl-overlap-cupti-1"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("xl") / "s.duckdb")
    for lg in LAUNCHES:
        v = lg.split("-")[1]
        out = CliRunner().invoke(main, ["launch", "ingest", path, str(DATA / lg), "--program",
                                        PROGRAM, "--option", f"version={v}", "--option",
                                        "target=sm_90"])
        assert out.exit_code == 0, out.output
    return path


def raw_step_medians(lg: str) -> dict[int, float]:
    """Oracle: each rank's median step duration (steps >= 1) read from the recorder's files."""
    out = {}
    for f in sorted((DATA / lg).glob("*.spans.jsonl.gz")):
        lines = [json.loads(x) for x in gzip.open(f, "rt")]
        head, spans = lines[0], lines[1:]
        durs = [s["end_ns"] - s["start_ns"] for s in spans
                if s.get("role") == "step" and s["step"] >= 1]
        out[head["rank"]] = statistics.median(durs)
    return out


def test_report_has_a_per_rank_section_per_launch(store: str, tmp_path: Path) -> None:
    svg = tmp_path / "t.svg"
    out = CliRunner().invoke(main, ["report", store, "--region", "tp_block/bias_gelu_kernel",
                                    "--timeline", str(svg), "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output[out.output.index("{"):])
    groups = {g["launch_group"]: g for g in doc["ranks"]}
    assert {"xl-serial-events-1", "xl-overlap-events-1"} <= set(groups)
    assert doc["ranks"][0]["timing_clean"]  # clean launches first
    for lg in ("xl-serial-events-1", "xl-overlap-events-1"):
        g = groups[lg]
        assert [r["rank"] for r in g["ranks"]] == [0, 1] and g["world_size"] == 2
        assert {r["rank"]: r["step_ns"] for r in g["ranks"]} == raw_step_medians(lg)
        assert g["critical_rank"] == 1 and sum(r["is_critical"] for r in g["ranks"]) == 1
        assert g["ranks"][0]["clock_error_ns"] == 0 and g["ranks"][1]["clock_error_ns"] > 0
    # serial: nothing overlaps; overlap version: most communication is hidden
    assert all(r["overlap_ns"] == 0 for r in groups["xl-serial-events-1"]["ranks"])
    assert all(r["exposed_comm_ns"] < 0.3 * r["comm_ns"]
               for r in groups["xl-overlap-events-1"]["ranks"])
    text = svg.read_text()
    assert text.startswith("<svg") and "rank 0 · stream:" in text and "rank 1 · steps" in text


def test_report_text_names_the_critical_rank(store: str, tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    out = CliRunner().invoke(main, ["report", store, "--region", "tp_block/bias_gelu_kernel",
                                    "--launch-group", "xl-overlap-events-1", "--perfetto",
                                    str(trace)])
    assert out.exit_code == 0, out.output
    doc = json.loads(trace.read_text())
    procs = {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"}
    threads = {(e["pid"], e["args"]["name"]) for e in doc["traceEvents"]
               if e["name"] == "thread_name"}
    assert procs == {"rank 0", "rank 1"}
    assert {p for p, _ in threads} == {0, 1} and len(threads) >= 4  # 2 streams per rank
    assert "launch xl-overlap-events-1 (2 ranks" in out.output
    assert "critical rank 1" in out.output


def test_unknown_launch_group_exits_2(store: str) -> None:
    out = CliRunner().invoke(main, ["report", store, "--region", "tp_block/bias_gelu_kernel",
                                    "--launch-group", "nope"])
    assert out.exit_code == 2 and "--launch-group nope" in out.output


def test_dashboard_shows_ranks_and_a_timeline_per_version(store: str, tmp_path: Path) -> None:
    out = CliRunner().invoke(main, ["dashboard", store, "--out", str(tmp_path / "d")])
    assert out.exit_code == 0, out.output
    page = (tmp_path / "d" / "index.html").read_text()
    assert page.count("<section class='ranks'>") == 1
    assert page.count("class='chart timeline-chart'") == 2  # one clean launch per version
    assert page.count("<b>critical</b>") >= 2


def test_the_dashboard_leads_with_the_clean_observed_result(store: str, tmp_path: Path) -> None:
    """Before any claim or derived value, the page states the observed step time and exposed
    communication of the timing-clean launches, serial -> overlap, with the diff's verdict."""
    out = CliRunner().invoke(main, ["dashboard", store, "--out", str(tmp_path / "d")])
    assert out.exit_code == 0, out.output
    page = (tmp_path / "d" / "index.html").read_text()
    lead = page.index("<p class='lead'>Observed on timing-clean launches")
    assert lead < page.index("<table class='claims'>")
    items = page[lead:page.index("</ul>", lead)]
    exposed = items[items.index("<b>exposed_communication</b>"):].split("</li>")[0]
    assert "version=serial (" in items.split("→")[0] and "version=overlap (" in items
    assert exposed.startswith("<b>exposed_communication</b>: 428.2 µs → 251.3 µs, ratio 0.58")
    assert exposed.endswith(", significant")
    assert "e+" not in page.split("<svg")[0]


def test_diff_per_collective_with_significance(store: str) -> None:
    out = CliRunner().invoke(main, ["diff", store, "--region", "tp_block/bias_gelu_kernel",
                                    "--from", "version=serial", "--to", "version=overlap",
                                    "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output[out.output.index("{"):])
    rows = {(r["quantity"], r["key"]): r for r in doc["collectives"]}
    ex = rows[("exposed_communication", "step")]
    assert ex["significant"] and ex["ci_high"] < 0.7 and ex["from_n"] == ex["to_n"] == 124
    ag = rows[("collective_duration", "allgather")]
    assert not ag["significant"] and ag["ci_low"] <= 1.0 <= ag["ci_high"]
    # the overlap version chunks the all-reduce in 4: four instances per step
    ar = rows[("collective_duration", "allreduce")]
    assert ar["to_n"] == 4 * ar["from_n"]


def test_a_range_without_claims_still_reports_its_ranks(store: str) -> None:
    # tp_block/mlp is a record_function range: no evidence row is keyed to it, the ranks answer
    out = CliRunner().invoke(main, ["report", store, "--region", "tp_block/mlp", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output[out.output.index("{"):])
    assert doc["claims"] == [] and doc["no_claims"]
    assert {g["launch_group"] for g in doc["ranks"]} >= {"xl-serial-events-1"}
    # a program with no launches at all is still "no evidence" (exit 3)
    out = CliRunner().invoke(main, ["report", store, "--region", "other/step"])
    assert out.exit_code != 0


def test_a_launch_without_steps_is_listed_and_drawn_around_its_middle_collectives(
        store: str, tmp_path: Path) -> None:
    svg = tmp_path / "c.svg"
    out = CliRunner().invoke(main, ["report", store, "--region", "tp_block/bias_gelu_kernel",
                                    "--launch-group", "xl-overlap-cupti-1", "--timeline",
                                    str(svg), "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output[out.output.index("{"):])
    (g,) = doc["ranks"]
    assert g["use"].startswith("kernel and collective timing") and g["critical_rank"] == 1
    assert all(r["n_steps"] == 0 and r["step_ns"] is None for r in g["ranks"])
    text = svg.read_text()
    assert "middle collectives" in text and "rank 1 · stream:" in text


def test_the_checker_guards_the_per_rank_views(store: str) -> None:
    ok = CliRunner().invoke(main, ["query", store, "SELECT rank, step_ns FROM rank_step WHERE "
                                   "timing_clean AND launch_group = 'xl-serial-events-1'"])
    assert ok.exit_code == 0, ok.output
    # pooling both versions' steps, CUPTI-only and clean runs alike, is refused
    bad = CliRunner().invoke(main, ["query", store, "SELECT median(step_ns) FROM rank_overview"])
    assert bad.exit_code == 1 and "AR01" in bad.output
