"""The default report fits a screen: the layer-norm program observed on the H200 (replayed
from ``tests/data/gpu/programs/model``) holds 16,460 claims about its ``load`` region, 16,384 of
them per-CTA, per-warp ``scope_cycles`` of one Proton-instrumented launch; before the summary
``argus report`` printed 16,453 table lines and as many verdict lines."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from argusdb.cli import main
from tests.answers.conftest import match_golden

LOAD = "fused_norm/layernorm_fwd/load"
KERNEL = "fused_norm/layernorm_fwd"


@pytest.fixture
def store(layernorm_store: str) -> str:
    return layernorm_store


def _report(store: str, *args: str) -> list[str]:
    r = CliRunner().invoke(main, ["report", store, *args])
    assert r.exit_code == 0, r.output
    return r.stdout.splitlines()


def _readable(lines: list[str]) -> None:
    text = "\n".join(lines)
    assert not re.search(r"\de[+-]\d", text), "exponent notation"
    assert "nan" not in text.split() and "NULL" not in text
    assert not re.search(r"[{\[]'", text), "a Python repr"
    assert "? passes" not in text


def test_the_region_report_is_the_golden_summary(store: str) -> None:
    lines = _report(store, "--region", LOAD)
    match_golden("report_load.txt", "\n".join(lines) + "\n")
    assert len(lines) <= 60 and max(map(len, lines)) <= 120
    _readable(lines)


def test_per_scope_values_are_one_distribution_line(store: str) -> None:
    lines = _report(store, "--region", LOAD)
    (cycles,) = [ln for ln in lines if ln.strip().startswith("scope_cycles")]
    assert "16,384 cta × sm × warp" in cycles and "median 212 cycles" in cycles
    assert "103 – 1,672 cycles" in cycles and "93 – 2,051 cycles" in cycles


def test_stall_reasons_are_grouped_by_collector_and_sorted(store: str) -> None:
    text = "\n".join(_report(store, "--region", LOAD))
    ncu = text.index("stall reasons, Nsight Compute warp-state samples")
    proton = text.index("stall reasons, Proton PC samples")
    assert "imc_miss 248, wait 112, selected 82" in text[proton:]
    assert "(+ 13 more, 8 of them 0)" in text[proton:]
    assert ncu < proton
    full = "\n".join(_report(store, "--region", LOAD, "--all"))
    assert "more" not in full.split("stall reasons, Proton PC samples")[1]
    assert "stall_long_scoreboard" not in text  # reasons are named without the prefix


def test_the_kernel_report_names_its_two_duration_cohorts(store: str) -> None:
    lines = _report(store, "--region", KERNEL)
    assert len(lines) <= 60
    _readable(lines)
    assert max(map(len, lines)) <= 120
    durations = [ln.split() for ln in lines if ln.strip().startswith("duration")]
    clean, replayed = durations[0], durations[1]
    # the two cohorts by their letters, which the version's legend spells out
    legend = dict(re.findall(r"(?:cohort |; )([a-z]): ([^;]+)", " ".join(
        ln.strip() for ln in lines[lines.index(next(ln for ln in lines if ln.startswith(
            "  cohort "))):][:3])))
    assert clean[1:4] == ["7.296", "µs", "observed"] and clean[5] == "28"
    assert legend[clean[4]] == "clean (activity_tracing)"
    assert legend[replayed[4]].startswith("replay(20")
    assert any(ln.startswith("  + ") and "more signals (--all)" in ln for ln in lines)
    assert any("forced_wait variant of bdd0d3b4a0118929" in ln for ln in lines)


def test_detail_and_scope_show_claims(store: str) -> None:
    one = _report(store, "--region", LOAD, "--scope", "cta=7", "--scope", "warp=3")
    assert len(one) == 2 and "cta=7,sm=131,warp=3" in one[1] and "322 cycles" in one[1]
    r = CliRunner().invoke(main, ["report", store, "--region", LOAD, "--scope", "lane=1"])
    assert r.exit_code == 2 and "--scope 'lane=1'" in r.stderr


def test_json_keeps_every_claim(store: str) -> None:
    import json

    r = CliRunner().invoke(main, ["report", store, "--region", LOAD, "--json"])
    doc = json.loads(r.stdout)
    assert len(doc["claims"]) == 16460
    one = next(c for c in doc["claims"] if c["signal"] == "scope_cycles")
    assert one["min_value"] == one["max_value"] == one["value"]


def test_a_stall_reason_of_two_samplers_is_two_claims(store: str) -> None:
    """Nsight Compute's source page and Proton's PC sampling both name a stall reason
    ``stall_barrier``: their counts are two cohorts (one per sampler), never one median."""
    import json

    r = CliRunner().invoke(main, ["report", store, "--region", LOAD, "--signal",
                                  "stall_barrier", "--json"])
    assert r.exit_code == 0, r.output
    claims = json.loads(r.stdout)["claims"]
    by = {(c["program_version"], c["sampler"]): c for c in claims}
    assert {s for _, s in by} == {"ncu", "proton"} and len(by) == len(claims)
    for c in claims:  # each one sampler's runs only
        assert {"ncu": "replay", "proton": "pc_sampling"}[c["sampler"]] in c["signature"]
        assert c["unit"] == "samples" and c["n"] == len(c["runs"])
