"""Headline: three versions of one matmul kernel recorded on the H200 (tests/data/gpu/README.md).

``matmul.py`` under three configurations (``--option config=...``): ``bk64_s3`` timed twice
(``run1``, ``run2``: the noise), ``bk32_s1`` and ``bn256_s3``; 60 clean launches per timing
file (cupti activity traces). ``bk64_s3`` also has its Nsight Compute pages (counter replay:
attributed instruction counts and a replayed duration) and a forced-wait variant of its mainloop
(derived exposed latency).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from click.testing import CliRunner

import argusdb
from argusdb.answers import export
from argusdb.answers.compat import match_cohorts
from argusdb.answers.diff import diff
from argusdb.answers.report import report
from argusdb.answers.select import (
    cohorts,
    fetch_rows,
    fetch_table,
    fetch_tables,
    fetch_where,
    resolve_version,
)
from argusdb.answers.trajectory import trajectory
from argusdb.api import Connection
from argusdb.cli import main
from argusdb.collectors.regions import ProgramSource
from argusdb.errors import QueryRefused
from argusdb.ingest import ingest_path
from argusdb.ingest.variants import VariantOf, record_check
from tests.conftest import DATA, GPU_KERNELS

GPU = DATA / "gpu"
MATMUL = GPU_KERNELS / "matmul.py"
KERNEL = "matmul/matmul_kernel"
MAINLOOP = "matmul/matmul_kernel/mainloop"
TIMING = {"bk64_s3": ("run1", "run2"), "bk32_s1": ("run1",), "bn256_s3": ("run1",)}


def opts(config: str) -> dict[str, str]:
    return {"config": config, "target": "sm_90"}


def launches(config: str, run: str) -> np.ndarray:
    recs = [json.loads(x) for x in (GPU / f"matmul.{config}.{run}.cupti.jsonl").read_text()
            .splitlines() if x.strip()]
    return np.array([r["end"] - r["start"] for r in recs if r["kind"] == "CONCURRENT_KERNEL"],
                    dtype=float)


def recorded(config: str) -> np.ndarray:
    return np.concatenate([launches(config, r) for r in TIMING[config]])


def build_store(path: Path) -> Connection:
    """The store of this module: timing runs, bk64_s3's ncu pages and forced-wait variant."""
    db = argusdb.connect(path, create=True)
    for config, runs in TIMING.items():
        for run in runs:
            db.ingest(GPU / f"matmul.{config}.{run}.cupti.jsonl", MATMUL, opts(config))
    for suffix in ("sass", "source.csv", "raw.csv"):
        db.ingest(GPU / f"matmul.bk64_s3.{suffix}", MATMUL, opts("bk64_s3"))
    parent = resolve_version(db, "config=bk64_s3", KERNEL).program_version
    stem = "matmul.bk64_s3.fw_mainloop"
    text = (GPU / "variants" / f"{stem}.py").read_text()
    variant = ingest_path(db.store, GPU / f"{stem}.cupti.jsonl", ProgramSource("matmul.py", text),
                          opts("bk64_s3"), VariantOf(parent, f"forced_wait:{MAINLOOP}"))
    assert record_check(db.store, variant.program_version, parent, 0.0)
    return db


@pytest.fixture(scope="module")
def h200(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Connection]:
    db = build_store(tmp_path_factory.mktemp("h200") / "h200.duckdb")
    yield db
    db.close()


def test_diff_separates_a_real_speedup_from_noise(h200: Connection) -> None:
    base, fast = recorded("bk64_s3"), recorded("bn256_s3")
    (row,) = diff(h200, KERNEL, "config=bk64_s3", "config=bn256_s3", ["duration"]).rows
    assert (row.n_from, row.n_to) == (120, 60)
    assert row.from_median == float(np.median(base)) == 210269.5
    assert row.to_median == float(np.median(fast)) == 195869.5
    assert row.ratio == pytest.approx(195869.5 / 210269.5)  # 6.85 % faster
    assert row.ci_low < row.ratio < row.ci_high < 0.99
    assert row.p_value < 1e-20 and row.significant and row.verdict == "lower by 6.85 %"
    # the README's figure, as printed (exact bootstrap distribution of the two medians)
    assert f"{row.ratio:.4f} [{row.ci_low:.4f}, {row.ci_high:.4f}]" == "0.9315 [0.9309, 0.9320]"
    # The noise floor: the run-to-run spread of bk64_s3 (two runs) is below the 1 % minimum.
    m1, m2 = np.median(launches("bk64_s3", "run1")), np.median(launches("bk64_s3", "run2"))
    spread = abs(m1 - m2) / np.median([m1, m2])
    assert spread < 0.001 and row.noise_floor == 0.01
    assert f"run-to-run spread {spread * 100:.2f} %" in row.noise_source

    # The same version timed twice is noise: not significant.
    run1, run2 = (h200.query(f"SELECT run_id FROM run WHERE artefact_name = "
                             f"'matmul.bk64_s3.{r}.cupti.jsonl'").to_pylist()[0]["run_id"]
                  for r in ("run1", "run2"))
    (noise,) = diff(h200, KERNEL, run1, run2, ["duration"]).rows
    assert noise.from_median == float(np.median(launches("bk64_s3", "run1")))
    assert noise.to_median == float(np.median(launches("bk64_s3", "run2")))
    assert noise.ci_low < 1.0 < noise.ci_high
    assert f"{noise.ratio:.4f} p={noise.p_value:.2f}" == "0.9998 p=0.81"
    assert not noise.significant and noise.verdict.startswith("not significant")

    # A slower configuration: twice the time.
    (slow,) = diff(h200, KERNEL, "config=bk64_s3", "config=bk32_s1", ["duration"]).rows
    assert slow.to_median == float(np.median(recorded("bk32_s1")))
    assert slow.significant and slow.ratio > 2.0 and slow.verdict.startswith("higher")


def test_diff_refuses_replayed_duration_against_clean_timing(h200: Connection) -> None:
    ncu = h200.query("SELECT run_id FROM run WHERE artefact_name = 'matmul.bk64_s3.raw.csv'"
                     ).to_pylist()[0]["run_id"]
    with pytest.raises(QueryRefused) as exc:
        diff(h200, KERNEL, ncu, "config=bn256_s3", ["duration"])
    (f,) = exc.value.findings
    assert (f.code, f.name) == ("AR02", "interference.conflict")
    assert "replay(20 passes" in f.message and "clean" in f.message and f.remedy


def test_cli_refusal_exit_1_with_rule_code(tmp_path: Path) -> None:
    path = str(tmp_path / "s.duckdb")
    with argusdb.connect(path, create=True) as db:
        ncu = db.ingest(GPU / "matmul.bk64_s3.raw.csv", MATMUL, opts("bk64_s3")).run_id
        db.ingest(GPU / "matmul.bn256_s3.run1.cupti.jsonl", MATMUL, opts("bn256_s3"))
    r = CliRunner().invoke(main, ["diff", path, "--region", KERNEL, "--from", ncu, "--to",
                                  "config=bn256_s3", "--signal", "duration", "--json"])
    assert r.exit_code == 1, r.output
    err = json.loads(r.stdout)["errors"][0]
    assert (err["code"], err["name"]) == ("AR02", "interference.conflict") and err["remedy"]


def test_diff_refuses_derived_against_observed(h200: Connection) -> None:
    """The rule on real cohorts: bk64_s3's derived exposed latency of the mainloop against an
    observed value (its attributed instruction count stands in for any non-derived claim)."""
    v = resolve_version(h200, "config=bk64_s3", KERNEL)
    found = cohorts(fetch_rows(h200, MAINLOOP, v, ["exposed_latency", "inst_executed"]))
    derived = [c for c in found.values() if c.key.evidence_class == "derived"]
    measured = [c for c in found.values() if c.key.evidence_class == "attributed"]
    assert len(derived) == len(measured) == 1
    pairs, findings = match_cohorts("exposed_latency", derived, measured)
    assert pairs == [] and [f.code for f in findings] == ["AR04"]
    assert findings[0].name == "class.mix" and "derived" in findings[0].message


def test_trajectory_of_three_versions(h200: Connection) -> None:
    t = trajectory(h200, [KERNEL], ["config=bk32_s1", "config=bk64_s3", "config=bn256_s3"],
                   ["duration"])
    clean = [s for s in t.series if s.key.standing == "clean"]
    assert len(clean) == 1
    pts = clean[0].points
    assert [p.median for p in pts] == [float(np.median(recorded(c)))
                                       for c in ("bk32_s1", "bk64_s3", "bn256_s3")]
    assert [p.n for p in pts] == [60, 120, 60]
    assert all(p.ci_low is not None and p.ci_low <= p.median <= p.ci_high for p in pts)
    assert pts[1].step_significant and pts[1].step_verdict.startswith("lower")  # type: ignore[union-attr]
    assert pts[2].step_significant and pts[2].ratio_to_first == pytest.approx(
        195869.5 / 424123.0)
    assert len({(p.start_line, p.end_line) for p in pts}) == 1  # one source: same lines


def test_report_classes_provenance_and_verdicts(h200: Connection) -> None:
    rep = report(h200, MAINLOOP, ["config=bk64_s3"],
                 signals=["exposed_latency", "inst_executed", "warp_stall_samples"])
    by = {c.signal: c for c in rep.claims}
    el = by["exposed_latency"]
    assert el.evidence_class == "derived" and el.verdict == "insufficient"
    assert "derived evidence alone" in el.reason
    (cond,) = el.conditions
    assert cond["probe"] == f"forced_wait:{MAINLOOP}" and cond["above_noise"] is True
    assert el.related_runs  # the unperturbed parent run it was derived against
    # Exposed latency = median variant launch - median parent launch (the derivation's rule).
    assert el.value == cond["variant_median_ns"] - cond["parent_median_ns"]
    inst = by["inst_executed"]
    assert inst.evidence_class == "attributed" and inst.verdict == "sufficient"
    assert inst.association_entropy == 0.0 and inst.standing == "clean"
    assert inst.signature.startswith("replay(")  # counters: replay does not perturb them
    kernel = report(h200, KERNEL, ["config=bk64_s3"], signals=["duration"]).claims
    clean = next(c for c in kernel if c.standing == "clean")
    assert clean.n == 120 and len(clean.runs) == 2 and clean.verdict == "sufficient"
    d = recorded("bk64_s3")
    q1, q3 = np.percentile(d, [25, 75])
    assert (clean.median, clean.iqr) == (float(np.median(d)), float(q3 - q1))
    replayed = next(c for c in kernel if c.standing != "clean")
    assert replayed.n == 1 and any("perturbed by its measurement" in n for n in replayed.notes)


def test_high_entropy_attribution_is_insufficient(tmp_path: Path) -> None:
    """Layer norm: tl.sum shared by regions mean and var, split 50/50 without a mapping run."""
    ln = DATA / "attribution"
    with argusdb.connect(tmp_path / "ln.duckdb", create=True) as db:
        for f in ("layernorm.ttgir", "layernorm.sass", "layernorm.source.csv"):
            db.ingest(ln / f, ln / "kernels" / "layernorm.py", {"target": "sm_90"})
        rows = db.query("SELECT value, association_entropy FROM evidence WHERE region_id = "
                        "'layernorm/layernorm_fwd/mean' AND signal = 'inst_executed' AND "
                        "evidence_class = 'attributed'").to_pylist()
        (claim,) = report(db, "layernorm/layernorm_fwd/mean", signals=["inst_executed"]).claims
        assert claim.value == rows[0]["value"]
        h = rows[0]["association_entropy"]
        assert claim.association_entropy == pytest.approx(h) and 0 < h < 1
        strict = report(db, "layernorm/layernorm_fwd/mean", signals=["inst_executed"],
                        max_entropy_bits=h / 2).claims[0]
        assert strict.verdict == "insufficient" and "high-entropy" in strict.reason
        lax = report(db, "layernorm/layernorm_fwd/mean", signals=["inst_executed"],
                     max_entropy_bits=1.0).claims[0]
        assert lax.verdict == "sufficient"
        assert any("contribution estimate" in n for n in claim.notes)


def test_scopes_that_do_not_nest_are_refused(tmp_path: Path) -> None:
    """Proton instrumentation of one kernel (tests/data/proton): the scope tree's whole-kernel
    'k2/load' cycles against the trace's per-CTA, per-warp cycles of the same scope."""
    with argusdb.connect(tmp_path / "p.duckdb", create=True) as db:
        tree = db.ingest(DATA / "proton" / "instr_tree.hatchet").run_id
        trace = db.ingest(DATA / "proton" / "instr_trace.chrome_trace").run_id
        whole, per_warp = (cohorts(fetch_where(db, [
            "e.scope_path = 'k2/load'", "e.signal = 'scope_cycles'", f"e.run_id = '{run}'"]))
            for run in (tree, trace))
    (kernel,) = whole.values()
    assert kernel.key.scope == () and kernel.key.standing == "instrumentation"
    warp = next(c for c in per_warp.values())
    assert dict(warp.key.scope).keys() == {"cta", "sm", "warp"}
    pairs, findings = match_cohorts("scope_cycles", [kernel], [warp])
    assert pairs == [] and [(f.code, f.name) for f in findings] == [("AR05", "scope.nesting")]


def test_perfetto_export_reads_back_through_a_chrome_trace_reader(h200: Connection,
                                                                  tmp_path: Path) -> None:
    """Export a recorded H200 run as Chrome trace JSON, read it with the kineto collector (a
    reader of torch.profiler's Chrome traces), and get the recorded launches back, to the ns."""
    from argusdb.collectors import detect

    run = h200.query("SELECT run_id FROM run WHERE artefact_name = "
                     "'matmul.bk64_s3.run1.cupti.jsonl'").to_pylist()[0]["run_id"]
    out = tmp_path / "run.json"
    out.write_text(json.dumps(export.perfetto_trace(h200, run)))
    reader = detect(out)
    assert reader.kind == "kineto.trace"
    art = reader.read(out)
    back = [b for t, b in art.batches() if t == "kernel_launch"]
    rows = [r for b in back for r in b.to_pylist()]
    recs = [json.loads(x) for x in (GPU / "matmul.bk64_s3.run1.cupti.jsonl").read_text()
            .splitlines() if x.strip()]
    kern = sorted((r for r in recs if r["kind"] == "CONCURRENT_KERNEL"), key=lambda r: r["start"])
    assert len(rows) == len(kern) == 60
    t0 = kern[0]["start"]
    assert [(r["kernel"], r["start_ns"], r["dur_ns"]) for r in rows] == [
        (k["name"], k["start"] - t0, k["end"] - k["start"]) for k in kern]
    assert {(r["grid_x"], r["block_x"], r["registers"]) for r in rows} == {
        (k["grid_x"], k["block_x"], k["registers_per_thread"]) for k in kern}


def test_runs_facts_joined_in_arrow_are_the_sql_join(h200: Connection) -> None:
    # fetch_table joins its runs' facts (and plans) from the connection's facts of every run;
    # a predicate over the run keeps the join in SQL: the same rows, columns and types
    where = ["starts_with(e.region_id, 'matmul/matmul_kernel')"]
    by_arrow = fetch_table(h200, where, plans=True)
    by_sql = fetch_table(h200, [*where, "r.run_id IS NOT NULL"], plans=True)
    assert by_arrow.schema == by_sql.schema and by_arrow.num_rows > 500
    assert sorted(map(repr, by_arrow.to_pylist())) == sorted(map(repr, by_sql.to_pylist()))
    assert by_arrow.column("run_seq").null_count == 0
    assert "plan_id" not in fetch_table(h200, where).column_names


def test_cohorts_of_an_arrow_table_are_the_row_loops(h200: Connection) -> None:
    # observed timing, attributed instruction counts (lineage: mapping runs) and the derived
    # exposed latency (lineage: conditions, parent run) of every region of the kernel
    where = ["starts_with(e.region_id, 'matmul/matmul_kernel')"]
    table = fetch_table(h200, where)
    by_columns, by_rows = cohorts(table), cohorts(fetch_where(h200, where))
    assert list(by_columns) == list(by_rows)  # same cohorts, in the same order
    classes = {k[2].evidence_class for k in by_rows}
    assert {"observed", "attributed", "derived"} <= classes
    for key, want in by_rows.items():
        got = by_columns[key]
        assert got.values == want.values and list(got.values) != []
        assert (got.tasks, got.signatures, got.conditions, got.related_runs) == (
            want.tasks, want.signatures, want.conditions, want.related_runs)
        assert (got.entropy_weighted, got.weight, got.unit, got.timing_clean) == (
            want.entropy_weighted, want.weight, want.unit, want.timing_clean)
    assert any(co.related_runs for co in by_rows.values())
    assert any(co.conditions for co in by_rows.values())
    # the samples, runs and per-run medians the columns kept are those the values give
    for key, want in by_rows.items():
        assert by_columns[key].columnwise is not None and want.columnwise is None
        assert by_columns[key].samples == want.samples
        assert by_columns[key].runs == want.runs
        assert by_columns[key].run_medians() == want.run_medians()


def test_run_medians_kept_by_the_columns_are_np_median_run_by_run(h200: Connection) -> None:
    # odd and even sample counts, ties, NaN samples, negative and zero values: the medians
    # kept by cohorts() of the table are np.median of each run's samples
    table = fetch_table(h200, ["starts_with(e.region_id, 'matmul/matmul_kernel')"])
    rng = np.random.default_rng(7)
    values = rng.integers(-3, 4, table.num_rows).astype(float)
    values[rng.random(table.num_rows) < 0.002] = np.nan
    values = np.where(rng.random(table.num_rows) < 0.3, values, values * 5e307)  # sums overflow
    table = table.set_column(table.column_names.index("value"), "value", pa.array(values))
    for co in cohorts(table).values():
        per_run: dict[str, list[float]] = {}
        for (run, _), v in co.values.items():
            per_run.setdefault(run, []).append(v)
        want = [float(np.median(per_run[r])) for r in sorted(per_run)]
        assert co.runs == sorted(per_run)
        np.testing.assert_array_equal(co.run_medians(), want)
        np.testing.assert_array_equal(co.samples, [co.values[k] for k in sorted(co.values)])
    co = next(iter(cohorts(table).values()))
    co.values[("another run", "0")] = 1.0  # samples added after grouping: computed afresh
    assert "another run" in co.runs and len(co.run_medians()) == len(co.runs)
    assert len(co.samples) == len(co.values)


def test_questions_asked_together_are_those_asked_one_by_one(h200: Connection) -> None:
    # Connection.queries runs independent questions' statements at the same time: the same
    # answers as query() one by one; every question is checked before any runs
    asked = ["SELECT run_id, program_version FROM run ORDER BY run_id",
             f"SELECT signal, count(*) AS n FROM evidence WHERE region_id = '{KERNEL}' "
             f"GROUP BY signal ORDER BY signal",
             "SELECT program_version, region_id, start_line FROM region_span "
             "ORDER BY program_version, region_id"]
    together = h200.queries(asked)
    assert [t.to_pylist() for t in together] == [h200.query(q).to_pylist() for q in asked]
    assert [t.schema for t in together] == [h200.query(q).schema for q in asked]
    ran: list[list[str]] = []
    real = h200._questions.stream_selects

    def counted(sqls: list[str], *args: object, **kw: object) -> object:
        ran.append(list(sqls))
        return real(sqls, *args, **kw)  # type: ignore[arg-type]

    h200._questions.stream_selects = counted  # type: ignore[method-assign]
    try:
        with pytest.raises(QueryRefused):  # two programs' kernels: AR01; nothing ran
            h200.queries([asked[0], "SELECT median(value) FROM evidence"])
        assert ran == []
        # facts questions are kept per store generation: asked again, not run again
        facts = "SELECT count(*) AS n FROM run"
        first = h200.queries([asked[1], facts], facts=[facts])
        again = h200.queries([asked[1], facts], facts=[facts])
        assert again[1] is first[1] and len(ran) == 2 and facts not in ran[1]
        assert h200.facts(facts) is first[1]
    finally:
        del h200._questions.stream_selects
    # the region's rows with other questions beside them: the rows fetch_table reads
    where = ["starts_with(e.region_id, 'matmul/matmul_kernel')"]
    rows, (spans,) = fetch_tables(h200, where, plans=True, also=[asked[2]])
    assert rows.equals(fetch_table(h200, where, plans=True))
    assert spans.to_pylist() == h200.query(asked[2]).to_pylist()


def test_a_diff_asked_again_from_kept_plans_is_the_same_answer(h200: Connection) -> None:
    # the first diff of a question runs it as asked, the second prepares its plan, later ones
    # run that plan on the caller's thread: the same rows, figures and verdicts every time
    asked = [diff(h200, KERNEL, "config=bk64_s3", "config=bn256_s3").to_json()
             for _ in range(4)]
    assert all(a == asked[0] for a in asked[1:])
    assert h200._questions._kept._idle  # the rows' question is kept with its plan
    (row,) = [r for r in asked[-1]["rows"] if r["signal"] == "duration"]
    assert f"{row['ratio']:.4f} [{row['ci_low']:.4f}, {row['ci_high']:.4f}]" == \
        "0.9315 [0.9309, 0.9320]"


def test_lineage_asked_apart_is_the_lineage_of_the_rows(h200: Connection,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # fetch_table asks the lineage of attributed and derived rows apart (joined by evidence
    # id): the rows the single question with the lineage gave; where the ids do not match one
    # to one, that question is asked instead
    from argusdb.answers import select

    where = ["starts_with(e.region_id, 'matmul/matmul_kernel')"]
    cond = where[0]
    whole = h200.query(f"SELECT {select._EVIDENCE_COLUMNS} FROM evidence AS e WHERE {cond}")
    rows = h200.query(f"SELECT {select._ROW_COLUMNS}, e.evidence_id FROM evidence AS e "
                      f"WHERE {cond}")
    joined = select._with_lineage(h200, rows, cond)
    assert joined.schema == whole.schema
    assert sorted(map(repr, joined.to_pylist())) == sorted(map(repr, whole.to_pylist()))
    assert joined.column("lineage").null_count < joined.num_rows  # attributed and derived
    asked: list[str] = []
    real = h200.query

    def twin_ids(sql: str, limit: int | None = None) -> pa.Table:
        asked.append(sql)
        t = real(sql, limit)
        if "e.evidence_class <> 'observed'" in sql:  # two rows under one id
            ids = t.column("evidence_id").to_pylist()
            t = t.set_column(0, "evidence_id", pa.array([ids[0], *ids[:-1]], pa.int64()))
        return t

    monkeypatch.setattr(h200, "query", twin_ids)
    again = select._with_lineage(h200, rows, cond)
    assert len(asked) == 2 and "CASE WHEN" in asked[1]  # asked whole instead
    assert sorted(map(repr, again.to_pylist())) == sorted(map(repr, whole.to_pylist()))

    def refused(sql: str, limit: int | None = None) -> pa.Table:
        asked.append(sql)
        if "e.evidence_class <> 'observed'" in sql:
            raise QueryRefused([])
        return real(sql, limit)

    monkeypatch.setattr(h200, "query", refused)
    asked.clear()
    again = select._with_lineage(h200, rows, cond)  # the question apart refused: whole
    assert len(asked) == 2 and "CASE WHEN" in asked[1]
    assert sorted(map(repr, again.to_pylist())) == sorted(map(repr, whole.to_pylist()))
    observed = rows.filter(pc.equal(rows.column("evidence_class"), "observed"))
    asked.clear()
    alone = select._with_lineage(h200, observed, cond)
    assert asked == [] and alone.column("lineage").null_count == alone.num_rows
