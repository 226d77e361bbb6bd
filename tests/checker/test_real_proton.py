"""Scope and interference rules on real Proton recordings (tests/data/proton, H200).

``instr_trace.chrome_trace``: intra-kernel instrumentation, ``scope_cycles`` per CTA and warp
for the in-kernel scopes ``k2/load`` and ``k2/store``; ``instr_tree.hatchet``: the same scopes
aggregated by Proton; ``trace.chrome_trace``: a clean activity trace of the same program.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from argusdb.api import checked
from argusdb.collectors.regions import ProgramSource
from argusdb.ingest import ingest_path
from argusdb.store import open_store
from argusdb.store.embedded import Store
from tests.conftest import DATA

PROTON = DATA / "proton"


@pytest.fixture(scope="module")
def proton(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, dict[str, str]]]:
    path = tmp_path_factory.mktemp("proton") / "p.duckdb"
    program = ProgramSource.from_path(PROTON / "proton_probe.py")
    ids = {}
    with open_store(path, create=True) as st:
        for key, name in (("RT", "instr_trace.chrome_trace"), ("RH", "instr_tree.hatchet"),
                          ("RC", "trace.chrome_trace")):
            ids[key] = ingest_path(st, PROTON / name, program, {"target": "sm_90"}).run_id
    st = open_store(path, read_only=True)
    yield st, ids
    st.close()


def codes(sql: str, proton: tuple[Store, dict[str, str]]) -> list[str]:
    st, ids = proton
    return [f.code for f in checked.check(sql.format(**ids), st)]


@pytest.mark.parametrize(("sql", "refused_by"), [
    # per-warp scope values against Proton's per-scope totals: a scope mix
    pytest.param("SELECT t.cta, t.warp, t.value / h.value AS share FROM evidence t "
                 "JOIN evidence h ON t.kernel = h.kernel AND t.scope_path = h.scope_path "
                 "WHERE t.run_id = '{RT}' AND h.run_id = '{RH}' "
                 "AND t.signal = 'scope_cycles' AND h.signal = 'scope_cycles'", ["AR05"],
                 id="per_warp_against_totals"),
    # instrumented cycles against the clean trace's durations: perturbed next to clean timing
    # (and per-warp rows next to kernel-wide ones)
    pytest.param("SELECT c.kernel, c.value, t.value FROM evidence c JOIN evidence t "
                 "ON c.program_version = t.program_version "
                 "WHERE c.run_id = '{RC}' AND c.signal = 'duration' AND t.run_id = '{RT}' "
                 "AND t.signal = 'scope_cycles'", ["AR02", "AR05"],
                 id="instrumented_against_clean"),
])
def test_refused(sql: str, refused_by: list[str], proton: tuple[Store, dict[str, str]]) -> None:
    assert codes(sql, proton) == refused_by


def test_per_warp_values_averaged_per_scope_first_are_accepted(
        proton: tuple[Store, dict[str, str]]) -> None:
    sql = ("WITH per AS (SELECT kernel, scope_path, avg(value) AS v FROM evidence "
           "WHERE run_id = '{RT}' AND signal = 'scope_cycles' AND evidence_class = 'observed' "
           "GROUP BY kernel, scope_path) "
           "SELECT p.scope_path, p.v, h.value FROM per p JOIN evidence h "
           "ON p.kernel = h.kernel AND p.scope_path = h.scope_path "
           "WHERE h.run_id = '{RH}' AND h.signal = 'scope_cycles' "
           "AND h.evidence_class = 'observed'")
    assert codes(sql, proton) == []
    st, ids = proton
    rows = checked.execute(sql.format(**ids), st).to_pylist()
    assert sorted(r["scope_path"] for r in rows) == ["k2/load", "k2/store"]


def test_aggregates_within_one_scope_level_are_accepted(
        proton: tuple[Store, dict[str, str]]) -> None:
    sql = ("SELECT t.scope_path, sum(t.value) FROM evidence t "
           "WHERE t.run_id = '{RH}' GROUP BY t.scope_path, t.kernel")
    assert codes(sql, proton) == []  # one scope level per group
    # observed rows only: attribution adds region rows of the same run at other levels
    sql = ("SELECT t.kernel, sum(t.value) FROM evidence t WHERE t.run_id = '{RT}' "
           "AND t.evidence_class = 'observed' GROUP BY t.kernel")
    assert codes(sql, proton) == []  # sum of slices of one level
    # without the class filter the attribution's region sums of the same cycles join in
    # (scope_path NULL, per CTA): a double count, refused
    assert "AR05" in codes(sql.replace("AND t.evidence_class = 'observed' ", ""), proton)
