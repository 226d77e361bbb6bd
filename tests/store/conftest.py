"""Fixtures of the store tests: a shared (DuckLake on PostgreSQL) store per test.

The PostgreSQL server comes from ARGUS_TEST_PG (a libpq connection string, which
``.ci/postgres start DIR`` prints); without it, 127.0.0.1:55432. When none answers, the
shared-store tests skip with the reason, unless ARGUS_REQUIRE_PG=1 (CI sets it) makes them fail.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from argusdb.store import open_store
from argusdb.store.embedded import Store

DEFAULT_PG = "host=127.0.0.1 port=55432 user=postgres dbname=postgres"


def pg_conninfo() -> str | None:
    info = os.environ.get("ARGUS_TEST_PG", DEFAULT_PG)
    kv = dict(t.split("=", 1) for t in info.split() if "=" in t)
    try:
        with socket.create_connection((kv.get("host", "127.0.0.1"), int(kv.get("port", 5432))),
                                      timeout=1):
            return info
    except OSError:
        return None


@pytest.fixture
def pg() -> str:
    info = pg_conninfo()
    if info is None:
        msg = ("no PostgreSQL on 127.0.0.1 for the shared-store tests: run "
               "'.ci/postgres start \"$(mktemp -d)\"' and set ARGUS_TEST_PG to what it prints")
        if os.environ.get("ARGUS_REQUIRE_PG") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return info


def lake_uri(pg: str, tmp_path: Path, name: str = "lake") -> str:
    """A new shared store: its own Postgres schema and data folder."""
    schema = f"argus_t_{uuid.uuid4().hex[:12]}"
    return (f"ducklake:postgres:{pg} metadata_schema={schema} "
            f"data_path={tmp_path / name}/")


@pytest.fixture
def shared_uri(pg: str, tmp_path: Path) -> Iterator[str]:
    uri = lake_uri(pg, tmp_path)
    yield uri


@pytest.fixture
def shared(shared_uri: str) -> Iterator[Store]:
    st = open_store(shared_uri, create=True)
    yield st
    st.close()
