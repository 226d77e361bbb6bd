"""Every collector refuses corrupt or implausible artefacts, and nothing is written.

The cases (``corrupt_cases.py``) are generated from the real recordings in ``tests/data``. Each
is ingested through the CLI into a store that already holds one run; the command must exit 2
with a JSON error naming the file, the problem and a fix, and the store file must be byte for
byte what it was (the CLI reads and checks every artefact before it opens the store), with the
same rows in every table.
"""

from __future__ import annotations

import glob
import hashlib
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from argusdb.cli import main
from argusdb.collectors import detect
from argusdb.errors import InputError
from argusdb.store import open_store
from tests.collectors.corrupt_cases import BAD_OPTIONS, CASES, CUPTI, VALID, Case
from tests.conftest import DATA, DEMO, KERNELS

_TABLES = ("run", "task", "program_version", "observed_evidence", "kernel_launch",
           "instruction", "inline_site", "scope_event")


def _cli(*args: str) -> tuple[int, str, str, BaseException | None]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.stdout, r.stderr, r.exception


def _digest(db: Path) -> dict[str, str]:
    """SHA-256 of the store and every file beside it (a WAL would show here)."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(db.parent.iterdir())
            if p.name.startswith(db.name)}


def _counts(db: Path) -> dict[str, int]:
    with open_store(db, read_only=True) as st:
        return {t: st.rows(f"SELECT count(*) AS n FROM {t}")[0]["n"] for t in _TABLES}


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding one real run (so 'unchanged' means something)."""
    db = tmp_path_factory.mktemp("store") / "s.duckdb"
    code, out, err, exc = _cli("ingest", str(db), str(CUPTI), "--json")
    assert code == 0, (out, err, exc)
    return db


def _assert_refused(db: Path, paths: list[Path], problem: str, named: Path,
                    extra: list[str]) -> None:
    before, rows = _digest(db), _counts(db)
    code, out, err, exc = _cli("ingest", str(db), *map(str, paths), *extra, "--json")
    assert exc is None or isinstance(exc, SystemExit), f"traceback: {exc!r}"
    assert code == 2, (code, out, err)
    error = json.loads(out)["errors"][0]
    assert error["file"] == str(named)
    assert re.search(problem, error["problem"]), error["problem"]
    assert len(error["fix"]) > 10, error
    assert _counts(db) == rows
    assert _digest(db) == before


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_corrupt_artefact_is_refused_and_nothing_written(case: Case, seeded: Path,
                                                         tmp_path: Path) -> None:
    if case.mutate is None and not case.sql:
        bad = case.src  # a valid artefact refused together with another (cross check)
    else:
        bad = case.write(tmp_path)
    _assert_refused(seeded, [*case.with_paths, bad], case.problem, bad, case.args)


@pytest.mark.parametrize("case", VALID, ids=[c.id for c in VALID])
def test_unusual_but_valid_artefact_is_read(case: Case, tmp_path: Path) -> None:
    path = case.write(tmp_path)
    ref = detect(case.src).read(case.src)
    art = detect(path).read(path)
    assert art.kind == ref.kind and art.kernels == ref.kernels
    assert ([(t, b.num_rows) for t, b in art.batches()]
            == [(t, b.num_rows) for t, b in ref.batches()])


@pytest.mark.parametrize(("option", "problem"), BAD_OPTIONS, ids=[o for o, _ in BAD_OPTIONS])
def test_bad_option_is_refused_before_the_store_is_touched(option: str, problem: str,
                                                           seeded: Path) -> None:
    before = _digest(seeded)
    code, out, _, exc = _cli("ingest", str(seeded), str(CUPTI), "--option", option, "--json")
    assert exc is None or isinstance(exc, SystemExit), f"traceback: {exc!r}"
    assert code == 2 and problem in json.loads(out)["errors"][0]["message"], out
    assert _digest(seeded) == before


def test_wrong_program_is_refused_before_the_store_is_touched(seeded: Path) -> None:
    before = _digest(seeded)
    code, out, _, _ = _cli("ingest", str(seeded), str(CUPTI), "--program",
                           str(KERNELS / "matmul.py"), "--json")
    assert code == 2 and "none of its kernels" in json.loads(out)["errors"][0]["problem"]
    assert _digest(seeded) == before


def test_refused_ingest_does_not_create_a_store(tmp_path: Path) -> None:
    bad = CASES[0].write(tmp_path)
    code, _, _, _ = _cli("ingest", str(tmp_path / "new.duckdb"), str(bad))
    assert code == 2 and not (tmp_path / "new.duckdb").exists()


def _shipped() -> list[Path]:
    """Every file the project ships under tests/data and the demo."""
    return [Path(p) for root in (DATA, DEMO)
            for p in sorted(glob.glob(str(root / "**" / "*"), recursive=True)) if Path(p).is_file()]


def test_every_shipped_artefact_still_ingests() -> None:
    """No false refusal: each shipped artefact argus reads is read whole without an error
    (``.ncu-rep`` needs Nsight Compute; the details page is refused by design)."""
    kinds: dict[str, int] = {}
    for path in _shipped():
        try:
            reader = detect(path)
        except InputError:
            continue  # not an artefact (a recording's notes, a plan)
        if reader.kind in ("ncu.report", "ncu.details_csv"):
            continue
        art = reader.read(path)
        rows = sum(b.num_rows for _, b in art.batches())
        # Triton IR yields call sites only: a kernel that inlines no library code has none.
        assert rows > 0 or art.kind.startswith("triton."), path
        kinds[art.kind] = kinds.get(art.kind, 0) + 1
    assert set(kinds) == {"nvdisasm.sass", "triton.ptx", "triton.ttgir", "triton.ttir",
                          "cupti.activity_jsonl", "ncu.source_csv", "ncu.raw_csv",
                          "kineto.trace", "proton.trace", "proton.instr_trace",
                          "proton.hatchet", "proton.pcsampling", "proton.instr_hatchet",
                          "nsys.sqlite", "torchdist.spans_jsonl"}, kinds
    assert sum(kinds.values()) >= 60, kinds
