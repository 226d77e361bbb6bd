"""Figures of an observed program, read from a store: what README's "Observing a program" states.

    python tools/h200/program_figures.py STORE REGION

Prints JSON: per signal, the kernel's observed total on the Nsight Compute source page, the sum
attributed over its regions and the ``_unattributed`` share; the source lines of other files
(Triton's library, ``triton/language/standard.py``) and the regions they were credited to; the
binaries of the kernel's evidence (launch sizes of the CUPTI rows, ncu's block size); the
exposed latency with the parent's launch-to-launch spread (its noise); and each task's cost.
``tests/runner/test_command_replay.py`` recomputes the same from the recorded task folders.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from argusdb.store import open_store
from argusdb.store.embedded import Store

SIGNALS = ("inst_executed", "warp_stall_samples")


def figures(st: Store, region: str) -> dict[str, Any]:
    """The figures of the latest plan that observed ``region``."""
    program, kernel = region.split("/")[:2]
    plan = st.rows("SELECT plan_id FROM plan WHERE region_id = ? ORDER BY created_at DESC "
                   "LIMIT 1", [region])[0]["plan_id"]
    out: dict[str, Any] = {"plan_id": plan, "region": region}
    cons = st.rows(
        "SELECT signal, observed, attributed, ok FROM attribution_conservation "
        "WHERE kernel = ? AND list_contains(?, signal) ORDER BY signal", [kernel, list(SIGNALS)])
    unattributed = {r["signal"]: r["v"] for r in st.rows(
        "SELECT signal, sum(value) AS v FROM region_attribution WHERE kernel = ? AND "
        "region_id LIKE '%/_unattributed' GROUP BY signal", [kernel])}
    out["conservation"] = {r["signal"]: {
        "observed": r["observed"], "attributed": r["attributed"], "equal": r["ok"],
        "unattributed_share": (unattributed.get(r["signal"], 0.0) / r["observed"]
                               if r["observed"] else None)} for r in cons}
    out["by_region"] = {r["region_id"].rsplit("/", 1)[-1]: {
        "inst_executed": r["inst"], "warp_stall_samples": r["stall"]} for r in st.rows(
        "SELECT region_id, sum(value) FILTER (WHERE signal = 'inst_executed') AS inst, "
        "sum(value) FILTER (WHERE signal = 'warp_stall_samples') AS stall "
        "FROM region_attribution WHERE kernel = ? GROUP BY region_id ORDER BY region_id",
        [kernel])}
    out["library_lines"] = [
        {"file": r["source_file"], "line": r["source_line"],
         "regions": r["regions"]} for r in st.rows(
            "SELECT source_file, source_line, list(DISTINCT region_id ORDER BY region_id) "
            "AS regions FROM attribution_split WHERE kernel = ? AND source_file <> ? "
            "GROUP BY ALL ORDER BY source_file, source_line", [kernel, f"{program}.py"])]
    out["binaries"] = {
        "cupti_block_x": sorted({r["block_x"] for r in st.rows(
            "SELECT DISTINCT k.block_x FROM kernel_launch k JOIN run r USING (run_id) "
            "JOIN task t ON t.task_id = r.task_id WHERE t.plan_id = ? AND k.kernel = ? "
            "AND r.program_version IN (SELECT program_version FROM program_version "
            "WHERE parent_version IS NULL)", [plan, kernel])}),
        "versions": [dict(r) for r in st.rows(
            "SELECT program_version, options ->> 'binary' AS binary, options ->> 'num_warps' "
            "AS num_warps, options ->> 'num_stages' AS num_stages, transform FROM "
            "program_version WHERE program = ? ORDER BY parent_version NULLS FIRST",
            [program])]}
    launches = st.rows(
        "SELECT median(e.value) AS med, quantile_cont(e.value, 0.25) AS q1, "
        "quantile_cont(e.value, 0.75) AS q3, count(*) AS n, t.task_id FROM observed_evidence e "
        "JOIN task t ON t.task_id = e.task_id WHERE t.plan_id = ? AND e.kernel = ? AND "
        "e.signal = 'duration' GROUP BY t.task_id ORDER BY t.task_id", [plan, kernel])
    out["durations_ns"] = {r["task_id"].rsplit(".", 1)[-1]: {
        "median": r["med"], "iqr": r["q3"] - r["q1"], "launches": r["n"]} for r in launches}
    keep = ("variant_median_ns", "parent_median_ns", "variant_iqr_ns", "parent_iqr_ns",
            "above_noise", "check")
    out["exposed_latency"] = [
        {"value": r["value"], "unit": r["unit"], **{
            k: v for k, v in json.loads(r["conditions"]).items() if k in keep}}
        for r in st.rows("SELECT value, unit, conditions::VARCHAR AS conditions FROM "
                         "derived_evidence WHERE region_id = ?", [region])]
    out["tasks"] = [dict(r) for r in st.rows(
        "SELECT action, status, round(wall_s, 2) AS wall_s, round(gpu_s, 2) AS gpu_s FROM "
        "plan_cost_task WHERE plan_id = ? ORDER BY finished_at", [plan])]
    return out


def main() -> None:
    store, region = sys.argv[1], sys.argv[2]
    with open_store(store, read_only=True) as st:
        print(json.dumps(figures(st, region), indent=1, default=str))


if __name__ == "__main__":
    main()
