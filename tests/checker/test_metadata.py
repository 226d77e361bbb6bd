"""The checker's metadata: a check never writes; writers refresh the summary incrementally;
rule cases run on an in-memory Metadata as well as on stores."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlglot

from argusdb import checker, demo
from argusdb.api import checked, connect
from argusdb.api.metadata import StoreMetadata
from argusdb.checker.metadata import MemoryMetadata, declared_relations
from argusdb.checker.predicates import Pred
from argusdb.checker.resolve import catalog_objects
from argusdb.collectors.regions import ProgramSource
from argusdb.errors import QueryRefused, UsageError
from argusdb.ingest import ingest_path
from argusdb.store.embedded import Store
from tests.conftest import DEMO, KERNELS

Q = "SELECT median(value) FROM evidence WHERE region_id = 'softmax/softmax_fwd'"


def _tables(db: object) -> set[str]:
    return {r["table_name"] for r in db.store.rows(  # type: ignore[attr-defined]
        "SELECT table_name FROM duckdb_tables() WHERE NOT temporary")}


def test_a_check_never_writes_the_store(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with connect(path, create=True) as db:
        from argusdb.collectors.regions import ProgramSource
        from argusdb.ingest import ingest_path
        ingest_path(db.store, DEMO / "softmax" / "softmax.cupti.jsonl",
                    ProgramSource.from_path(KERNELS / "softmax.py"), dict(demo.OPTIONS))
        before = _tables(db)
        assert db.check(Q) == []
        assert _tables(db) == before  # no _argus_meta_* written by a check
        assert StoreMetadata.of(db.store).summary("evidence")[0].startswith("temp.")


def test_refresh_is_incremental_and_read_only_connections_reuse_it(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    softmax = ProgramSource.from_path(KERNELS / "softmax.py")
    with connect(path, create=True) as db:
        # ingest_path, not Connection.ingest (which refreshes the summary itself)
        r1 = ingest_path(db.store, DEMO / "softmax" / "softmax.cupti.jsonl", softmax,
                         dict(demo.OPTIONS))
        # the read-write open summarised the empty store: the first run is added to it
        assert checked.refresh_metadata(db.store) == "incremental"
        assert checked.refresh_metadata(db.store, [r1.run_id]) == "fresh"
        r2 = ingest_path(db.store, DEMO / "softmax" / "softmax.cupti.jsonl", softmax,
                         {**demo.OPTIONS, "num_warps": "8"})
        assert checked.refresh_metadata(db.store, [r2.run_id]) == "incremental"
        inc = db.store.rows("SELECT * FROM _argus_meta_evidence ORDER BY ALL")
        assert checked.refresh_metadata(db.store) == "fresh"
    with connect(path) as db:  # a full rebuild gives the same rows
        db.store.sql("DELETE FROM _argus_meta_stamp")
        assert checked.refresh_metadata(db.store) == "rebuilt"
        assert db.store.rows("SELECT * FROM _argus_meta_evidence ORDER BY ALL") == inc
    with connect(path, read_only=True) as db:
        assert StoreMetadata.of(db.store).summary("evidence")[0] == "main._argus_meta_evidence"
        assert [f.code for f in db.check(Q)] == ["AR01"]


def test_every_readable_relation_declares_its_evidence_columns() -> None:
    public = {n for n, o in catalog_objects().items()
              if o.kind in ("table", "view") and not n.startswith("_")}
    declared = declared_relations()
    assert public <= set(declared), sorted(public - set(declared))
    for rel, cols in declared.items():
        assert set(cols) <= set(catalog_objects()[rel].columns), rel


def test_memory_metadata_is_a_metadata() -> None:
    rows = [{"program_version": v, "run_id": f"r{v}", "signal": "duration", "unit": "ns",
             "_granularity": "kernel", "_scope": "kernel", "_standing": "clean",
             "evidence_class": "observed", "region_id": "k/k", "_rows": 5} for v in "ab"]
    meta = MemoryMetadata({"evidence": rows})
    assert [f.code for f in checked.check("SELECT median(value) FROM evidence", meta)] == \
        ["AR01"]
    assert checked.check("SELECT median(value) FROM evidence WHERE program_version = 'a'",
                         meta) == []


def test_stale_summary_on_a_read_only_store_is_rebuilt_in_memory(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with connect(path, create=True) as db:
        db.ingest(DEMO / "softmax" / "softmax.cupti.jsonl", KERNELS / "softmax.py",
                  dict(demo.OPTIONS))
        checked.refresh_metadata(db.store)
    with connect(path) as db:  # a writer that never refreshes the checker's summaries
        ingest_path(db.store, DEMO / "softmax" / "softmax.cupti.jsonl",
                    ProgramSource.from_path(KERNELS / "softmax.py"),
                    {**demo.OPTIONS, "num_warps": "8"})
    with connect(path, read_only=True) as db:
        assert [f.code for f in db.check(Q)] == ["AR01"]
        assert StoreMetadata.of(db.store).summary("evidence")[0] == "temp._argus_meta_evidence"


def test_refresh_after_ingests_reads_new_runs_and_whole_rebuilds_only(tmp_path: Path) -> None:
    # The layer norm's shared lines are split by a mapping run: its first source pages
    # rebuild the version whole (older runs re-split), later ones add their own rows only.
    from tests.attribution.test_incremental import LN, OPTS, PROG, page_copy

    path = tmp_path / "s.duckdb"
    with connect(path, create=True) as db:
        for p in (LN / "layernorm.ttgir", LN / "layernorm.sass"):
            db.ingest(p, LN / "kernels" / "layernorm.py", OPTS)
        states = []
        for i in range(4):
            ingest_path(db.store, page_copy(tmp_path, i), PROG, OPTS)
            whole = db.store.rows("SELECT program_version FROM materialization "
                                  "WHERE name = 'rebuilt'")
            states.append((len(whole), checked.refresh_metadata(db.store)))
            assert not db.store.rows("SELECT * FROM materialization WHERE name = 'rebuilt'")
        assert states[0] == (1, "incremental") and states[-1] == (0, "incremental")
        inc = db.store.rows("SELECT * FROM _argus_meta_evidence ORDER BY ALL")
        db.store.sql("DELETE FROM _argus_meta_stamp")
        assert checked.refresh_metadata(db.store) == "rebuilt"
        assert db.store.rows("SELECT * FROM _argus_meta_evidence ORDER BY ALL") == inc


def _pred(text: str) -> Pred:
    node = sqlglot.parse_one(text, read="duckdb")
    return Pred(node, [c.name for c in node.find_all(sqlglot.exp.Column)])


def _rows_by_path(meta: StoreMetadata, preds: list[str], keys: list[str]
                  ) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    ps, ks = [_pred(p) for p in preds], [_pred(k) for k in keys]
    cols = {n for p in ps + ks for n in p.names}
    meta._asks.clear()
    meta._py.clear()
    by_sql = meta.rows("evidence", ps, ks, cols)  # a process's first question: DuckDB
    by_python = meta.rows("evidence", ps, ks, cols)  # later ones: the summary in Python
    return by_sql, by_python


def test_metadata_rows_are_grouped_to_the_rules_columns_alike_on_every_path(
        seeded_store: Store) -> None:
    from argusdb.checker.metadata import RULE_COLUMNS
    from tests.checker.conftest import memory_of

    meta = StoreMetadata.of(seeded_store)
    memory = memory_of(seeded_store)
    for preds, keys in (([], []), (["signal = 'duration'"], ["program_version"]),
                        (["region_id IS NOT NULL"], ["run_id", "signal = 'busy_ns'"])):
        by_sql, by_python = _rows_by_path(meta, preds, keys)
        mem = memory.rows("evidence", [_pred(p) for p in preds], [_pred(k) for k in keys])
        assert by_sql == by_python  # same groups, same order (first summary row)
        assert sorted(map(repr, by_sql)) == sorted(map(repr, [
            {k: r[k] for k in by_sql[0]} for r in mem]))
        # one row per distinct value of the rules' columns and the keys: runs aggregated
        seen = [tuple(r[c] for c in (*RULE_COLUMNS, *(f"_k{i}" for i in range(len(keys)))))
                for r in by_sql]
        assert len(seen) == len(set(seen))
        for r in by_sql:
            assert r["_runs"] == sorted(set(r["_runs"])) and r["_runs_complete"] in (True, False)
    # keyed by run: one run per group
    by_sql, _ = _rows_by_path(meta, [], ["run_id"])
    assert all(len(r["_runs"]) <= 1 and r["_runs_complete"] for r in by_sql)


def test_a_sample_of_runs_keeps_the_standing_rule_exact() -> None:
    from argusdb.checker import metadata as md
    from argusdb.checker.context import Props

    def row(run: str, standing: str) -> dict[str, object]:
        return {"program_version": "a", "run_id": run, "task_id": f"t{run}",
                "signal": "duration", "_standing": standing, "_rows": 1}

    many = [row(f"r{i:03d}", "clean") for i in range(3 * md.ID_SAMPLE)]
    grouped = md.group_rows([*many, row("zz", "replay")])
    p = Props.of_rows(grouped)
    # the clean group: its 32 smallest runs and its largest; the perturbed one: its run
    assert p.mixed("standing") and p.runs_sampled and len(p.runs) == md.ID_SAMPLE + 2
    assert p.to_json()["run_count_at_least"] == md.ID_SAMPLE + 2
    # one clean run with many rows and one perturbed run, grouped together: still two runs
    (g,) = md.group_rows([{**row("r1", "x"), "_standing": None}] * (2 * md.ID_SAMPLE)
                         + [{**row("r2", "x"), "_standing": None}])
    assert g["_runs"] == ["r1", "r2"] and not g["_runs_complete"]
    assert Props.of_rows([{**g, "_standing": "clean"}, {**g, "_standing": "replay"}]
                         ).mixed("standing")
    # one run's clean counters and its own perturbed timing are no conflict, grouped or not
    one = md.group_rows([row("r1", "clean"), row("r1", "replay")])
    assert not Props.of_rows(one).mixed("standing")
    assert not Props.of_rows([row("r1", "clean"), row("r1", "replay")]).mixed("standing")
    # two rows of one run each, different runs: a conflict
    assert Props.of_rows(md.group_rows([row("r1", "clean"), row("r2", "replay")])
                         ).mixed("standing")


def test_an_accepted_report_is_kept_until_the_next_write(tmp_path: Path) -> None:
    # The same text on unchanged data runs on the kept report (no second analysis); a write
    # (here a second version of the region) drops it: the same question is then refused.
    sm = ProgramSource.from_path(KERNELS / "softmax.py")
    trace = DEMO / "softmax" / "softmax.cupti.jsonl"
    with connect(tmp_path / "s.duckdb", create=True) as db:
        db.ingest(trace, sm, dict(demo.OPTIONS))
        analysed: list[str] = []
        real = checker.analyse

        def counted(sql: str, store: object) -> checker.Report:
            analysed.append(sql)
            return real(sql, store)  # type: ignore[arg-type]

        checker.analyse = counted  # type: ignore[assignment]
        try:
            assert db.query(Q).num_rows == 1 and db.query(Q).num_rows == 1
            assert analysed == [Q]
            refused = "SELECT median(value) FROM evidence"  # kernels of two programs: AR01
            for _ in range(2):
                with pytest.raises(QueryRefused):
                    db.query(refused)
            assert analysed == [Q, refused, refused]  # refusals are judged afresh
            assert db.check(Q) == [] and analysed[-1] == Q  # check() always analyses
            runs = db.facts("SELECT count(*) AS n FROM run")
            assert db.facts("SELECT count(*) AS n FROM run") is runs  # kept, not run again
            with pytest.raises(UsageError):
                db.facts(Q)  # evidence: asked with query(), never kept
            versions = db.program_versions()
            assert versions == db.query(
                "SELECT program_version, program, options, transform FROM program_version "
                "ORDER BY program_version").to_pylist()
            db.ingest(trace, sm, {**demo.OPTIONS, "num_warps": "8"})
            with pytest.raises(QueryRefused) as err:
                db.query(Q)
            assert "AR01" in {f.code for f in err.value.findings}
            assert len(db.program_versions()) == len(versions) + 1
            assert db.facts("SELECT count(*) AS n FROM run").column("n")[0].as_py() == \
                runs.column("n")[0].as_py() + 1
        finally:
            checker.analyse = real  # type: ignore[assignment]
