"""``argus diff`` of a region with a whole Nsight Compute source page fits a screen.

The demo's softmax recordings (CUPTI trace, SASS, source page) ingested under two versions:
the ``reduce`` region has 55 attributed signals; the default view prints 20 rows (the headline
signals first), says how many more there are, and the stderr notes fold signals judged alike
into one line. ``--all`` and ``--json`` keep every row.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from argusdb.cli import main
from tests.conftest import DEMO, KERNELS

REGION = "softmax/softmax_fwd/reduce"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[str]]:
    path = str(tmp_path_factory.mktemp("diffscreen") / "s.duckdb")
    files = [str(DEMO / "softmax" / f"softmax.{k}") for k in ("cupti.jsonl", "sass",
                                                               "source.csv")]
    versions = []
    for extra in ([], ["--option", "num_warps=8"]):
        r = CliRunner().invoke(main, ["-q", "ingest", path, *files, "--program",
                                      str(KERNELS / "softmax.py"), "--option", "target=sm_90",
                                      *extra, "--json"])
        assert r.exit_code == 0, r.output
        versions.append(json.loads(r.stdout)["runs"][0]["program_version"])
    return path, versions


def _diff(store: tuple[str, list[str]], *extra: str) -> tuple[list[str], list[str]]:
    path, (a, b) = store
    r = CliRunner().invoke(main, ["diff", path, "--region", REGION, "--from", a, "--to", b,
                                  *extra])
    assert r.exit_code == 0, r.output
    return r.stdout.splitlines(), r.stderr.splitlines()


def test_the_default_diff_fits_a_screen(store: tuple[str, list[str]]) -> None:
    out, err = _diff(store)
    every = json.loads(CliRunner().invoke(main, ["diff", store[0], "--region", REGION,
                                                 "--from", store[1][0], "--to", store[1][1],
                                                 "--json"]).stdout)["rows"]
    assert len(every) > 40
    assert len(out) == 1 + 20 + 1 and len(out) + len(err) <= 60
    shown = [ln.split()[0] for ln in out[1:-1]]
    assert {"inst_executed", "thread_inst_executed", "warp_stall_samples"} <= set(shown)
    assert shown == sorted(shown)  # the diff's own order
    assert out[-1] == (f"+ {len(every) - 20:,} more signals (--all or --json: every row); "
                       f"{len(every):,} of the {len(every):,} signals unchanged")
    assert any(" and " in ln and "more: noise floor" in ln for ln in err)


def test_all_prints_every_row(store: tuple[str, list[str]]) -> None:
    out, _ = _diff(store, "--all")
    every = json.loads(CliRunner().invoke(main, ["diff", store[0], "--region", REGION,
                                                 "--from", store[1][0], "--to", store[1][1],
                                                 "--json"]).stdout)["rows"]
    assert len(out) == 1 + len(every)
