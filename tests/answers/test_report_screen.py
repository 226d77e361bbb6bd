"""The report's screen view fits a screen for every region of the demo store: at most 120
columns and 60 lines, every value with its stored unit, every shortened name read as one
signal only.

Before, ``argus report argus-demo.duckdb --region matmul/matmul_kernel`` was 212 columns wide:
Nsight Compute's raw names with their section (``SM_A.TriageCompute.sm__inst_executed_pipe_
uniform_realtime.avg.pct_of_peak_sustained_elapsed``) and the cohort
``clean (replay(38 passes)+pc_sampling)`` written out on every line.
"""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from argusdb import demo
from argusdb.answers import format as fmt
from argusdb.answers.names import screen_names
from argusdb.api import connect
from argusdb.cli import main
from tests.answers.conftest import match_golden

#: Time units a value in ns may be shown in.
TIME = {"ns", "µs", "ms", "s"}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("screen") / "argus-demo.duckdb"
    with connect(path, create=True) as db:
        demo.build(db.store)
    return str(path)


def _regions(store: str) -> list[str]:
    with connect(store, read_only=True) as db:
        return [r["region_id"] for r in db.query(
            "SELECT DISTINCT region_id FROM evidence WHERE region_id IS NOT NULL "
            "ORDER BY region_id").to_pylist()]


def _report(store: str, region: str, *args: str) -> str:
    r = CliRunner().invoke(main, ["report", store, "--region", region, *args])
    assert r.exit_code == 0, r.output
    return r.output


def _read_as(shown: str, names: set[str]) -> list[str]:
    """The signals of ``names`` a signal cell could be: the name itself, else the names that
    are it after a leading ``SECTION.Group.``, or with its parts around each ``…`` in order."""
    if "…" not in shown and shown in names:
        return [shown]
    return sorted(n for n in names if _reads_as(shown, n))


def _reads_as(shown: str, name: str) -> bool:
    parts = shown.split("…")
    if len(parts) == 1:
        return name == shown or name.endswith("." + shown)
    at = name.find(parts[0])
    if at < 0 or (at and name[at - 1] != ".") or not name.endswith(parts[-1]):
        return False
    at += len(parts[0])
    for part in parts[1:-1]:
        at = name.find(part, at)
        if at < 0:
            return False
        at += len(part)
    return at <= len(name) - len(parts[-1])


def _unit_shown(cell: str, unit: str | None) -> bool:
    """Whether a value cell carries ``unit`` (scaled: ``µs`` for ns, ``M sector``, ``MB``)."""
    if unit is None:
        return True
    words = cell.removeprefix("median ").split()
    if cell == fmt.MISSING or len(words) < 2:
        return False
    shown = words[-1]
    if unit in ("ns", "us", "ms", "s"):
        return shown in TIME
    if unit in ("byte", "bytes"):
        return shown.endswith("B")
    return shown == fmt.display_unit("", unit) or shown in (unit, fmt.display_unit(
        "inst_executed", unit))


def check_screen(store: str, region: str) -> str:
    """The region's default report, checked: what every screen view must hold."""
    text = _report(store, region)
    lines = text.splitlines()
    assert len(lines) <= fmt.SCREEN_LINES, (region, len(lines))
    assert max(map(len, lines)) <= fmt.SCREEN_WIDTH, (region, max(lines, key=len))
    claims = json.loads(_report(store, region, "--json"))["claims"]
    units = {c["signal"]: c["unit"] for c in claims}
    tables = 0
    for i, line in enumerate(lines):
        if not line.startswith("  signal "):
            continue
        tables += 1
        at = line.find("  cohort ") + 2 if "  cohort " in line else -1
        rows = []
        for row in lines[i + 1:]:
            if not row.startswith("  ") or row.startswith(("  +", "  cohort", "  stall",
                                                            "  insufficient")):
                break
            cells = re.split(r"\s{2,}", row.strip())
            rows.append({"signal": cells[0], "value": cells[1],
                         **({"cohort": row[at:].split()[0]} if at > 0 else {})})
        legend = " ".join(ln for ln in lines[i:] if ln.startswith(("  cohort ", "    ")))
        title = lines[i - 1]
        for row in rows:
            # one signal only, of the region's claims, reads as the cell
            (name,) = _read_as(row["signal"], set(units))
            assert _unit_shown(row["value"], units[name]), (region, name, row["value"])
            # the cohort: in the title when shared, else a letter the legend spells out
            if "cohort" in row:
                assert f"{row['cohort']}: " in legend, (region, row)
            else:
                assert "; cohort " in title
    assert tables == len({c["program_version"] for c in claims
                          if not c["signal"].startswith("stall_")})
    return text


@pytest.mark.parametrize(("region", "golden"), [
    ("matmul/matmul_kernel", "report_demo_matmul.txt"),
    ("softmax/softmax_fwd", "report_demo_softmax.txt")])
def test_the_kernel_report_of_the_demo_store_is_the_golden_screen(
        store: str, region: str, golden: str) -> None:
    text = check_screen(store, region)
    match_golden(golden, text)
    # the section and group left out; the three cohorts named once each
    assert "TriageCompute" not in text.split("TPC.TriageCompute")[0]
    assert ("l1tex__t_sectors.sum" in text and "68.16 M sector" in text) or region != \
        "matmul/matmul_kernel"
    assert text.count("clean (replay(38 passes)+pc_sampling)") == 0  # wrapped in the legend
    assert re.search(r"\d %", text) and not re.search(r"\d%", text)


def test_every_region_of_the_demo_store_fits_a_screen(store: str) -> None:
    regions = _regions(store)
    assert len(regions) == 9  # two kernels and their seven regions
    for region in regions:
        check_screen(store, region)


def test_json_keeps_the_full_names(store: str) -> None:
    doc = json.loads(_report(store, "matmul/matmul_kernel", "--json"))
    names = {c["signal"] for c in doc["claims"]}
    long = "SM_A.TriageCompute.sm__inst_executed_pipe_uniform_realtime.avg." \
           "pct_of_peak_sustained_elapsed"
    assert long in names and not any("…" in n for n in names)


def test_screen_names_are_distinct_and_fit() -> None:
    names = [f"SM_A.TriageCompute.sm__inst_executed_pipe_{p}_realtime.avg."
             "pct_of_peak_sustained_elapsed" for p in ("alu", "xu", "uniform", "fma")]
    names += ["sm__cycles_active.avg", "TPC.TriageCompute.sm__cycles_active.avg"]
    for width in (24, 32, 44, 80):
        short = screen_names(names, width)
        assert len(set(short.values())) == len(names)
        assert all(len(s) <= max(width, len(n) if len(n) <= width else 0)
                   for n, s in short.items())
        for n, s in short.items():
            assert _read_as(s, set(names)) == [n], (width, s)
    # a section is kept where the name without it is another signal's
    assert screen_names(names, 80)["TPC.TriageCompute.sm__cycles_active.avg"] == \
        "TPC.TriageCompute.sm__cycles_active.avg"


