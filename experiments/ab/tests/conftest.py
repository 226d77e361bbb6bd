"""The recorded H200 A/B (tests/data/gpu/ab/): both GPU calls unpacked once per session."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from argusdb.api import connect

DATA = Path(__file__).resolve().parents[3] / "tests" / "data" / "gpu" / "ab"
PARTS = ("seeds0-3", "seeds4-7")


@pytest.fixture(scope="session")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The two recorded runs' folders (``KERNEL/{log.jsonl,meta.json,store.duckdb}``)."""
    dirs = []
    for part in PARTS:
        dest = tmp_path_factory.mktemp(part)
        with tarfile.open(DATA / f"{part}.tar.xz") as tar:
            tar.extractall(dest, filter="data")
        # A store recorded by an earlier argusdb is refreshed by one read-write open (its
        # materializations follow the current SQL modules), as a user's would be.
        for store in sorted((dest / "ab").glob("*/store.duckdb")):
            connect(store).close()
        dirs.append(dest / "ab")
    return dirs


def log_rows(kdir: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in (kdir / "log.jsonl").read_text().splitlines() if ln]
