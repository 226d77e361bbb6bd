"""A shared store's URI and the in-memory DuckDB with its lake attached as ``lake``: the
extension files loaded from their wheels (nothing downloaded), DuckLake's options from the URI,
and the attach errors told as what to do (see :mod:`argusdb.store.shared`)."""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import duckdb

from argusdb.errors import StoreError
from argusdb.schema.sqltext import literal as _q
from argusdb.store.connect import NOT_TRIED_COMPRESSION, SHARED_PREFIX
from argusdb.store.faults import first_line as _first
from argusdb.store.versions import parse_time

#: Extension wheels (package, extension name) loaded from their files, in load order.
EXTENSIONS = (("duckdb_extension_postgres_scanner", "postgres_scanner"),
              ("duckdb_extension_ducklake", "ducklake"))
_OWN_KEYS = ("data_path", "metadata_schema")



@dataclass(frozen=True)
class LakeUri:
    """A parsed ``ducklake:`` store URI."""

    uri: str
    catalog: str
    data_path: str | None
    metadata_schema: str | None

    @classmethod
    def parse(cls, uri: str) -> LakeUri:
        rest = uri[len(SHARED_PREFIX):].strip()
        own: dict[str, str] = {}
        kept: list[str] = []
        for tok in rest.split():
            key, sep, val = tok.partition("=")
            if sep and key in _OWN_KEYS:
                own[key] = val
            else:
                kept.append(tok)
        catalog_ = " ".join(kept)
        if not catalog_:
            raise StoreError(f"{uri}: names no DuckLake catalog. Write e.g. "
                             "'ducklake:postgres:dbname=argus host=127.0.0.1 "
                             "data_path=/srv/argus/lake'.")
        return cls(uri, catalog_, own.get("data_path"), own.get("metadata_schema"))

    @property
    def conninfo(self) -> str | None:
        """The libpq connection string of a PostgreSQL catalog (None for another catalog)."""
        if self.catalog.startswith("postgres:"):
            return self.catalog[len("postgres:"):].strip()
        return None

    @property
    def lock_key(self) -> int:
        """The advisory lock of this store: a 64-bit hash of its name in the database."""
        name = f"argusdb store {self.metadata_schema or 'public'}"
        return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def extension_files() -> list[Path]:
    """The extension files of the installed wheels, for this DuckDB.

    Raises:
        StoreError: a wheel is missing (install argusdb's ``shared`` extra).
    """
    out = []
    for pkg, name in EXTENSIONS:
        spec = importlib.util.find_spec(pkg)
        if spec is None or not spec.submodule_search_locations:
            raise StoreError(f"a shared store needs the {pkg.replace('_', '-')} wheel. Install "
                             f"it with: pip install 'argusdb[shared]'")
        f = (Path(next(iter(spec.submodule_search_locations))) / "extensions" /
             f"v{duckdb.__version__}" / f"{name}.duckdb_extension")
        if not f.is_file():
            raise StoreError(f"{f}: missing; the installed {pkg} wheel is not built for DuckDB "
                             f"{duckdb.__version__}. Install the matching one "
                             f"(pip install 'argusdb[shared]').")
        out.append(f)
    return out


def _attach_error(lu: LakeUri, exc: Exception) -> StoreError:
    text = str(exc)
    if "explicitly disabled" in text:
        fix = f"no argusdb store there yet. Create it with: argus init {_q(lu.uri)}"
    elif "data_path is not set" in text:
        fix = "add data_path=DIR to the URI to create the store there"
    elif "does not exist" in text or "creating a new DuckLake" in text:
        fix = f"create it first with: argus init {_q(lu.uri)} (with data_path=DIR)"
    elif "snapshot" in text.lower():
        fix = "'argus runs STORE --snapshots' lists the snapshots"
    else:
        fix = ("check that PostgreSQL is running and the connection string is right "
               "(host, port, dbname, user)")
    return StoreError(f"{lu.uri}: cannot open the shared store ({_first(exc)}); {fix}.")


class _Closable(Protocol):
    def close(self) -> None: ...


@contextmanager
def closed_on_failure(lu: LakeUri, opened: _Closable) -> Iterator[None]:
    """Close ``opened`` when the block fails; a DuckDB error becomes the attach's StoreError."""
    try:
        yield
    except BaseException as exc:
        opened.close()
        if isinstance(exc, duckdb.Error):
            raise _attach_error(lu, exc) from exc
        raise


def _snapshot_opt(as_of: str) -> str:
    spec = as_of.strip()
    if spec.isdigit():
        return f"SNAPSHOT_VERSION {int(spec)}"
    return f"SNAPSHOT_TIME {_q(parse_time(spec).isoformat(sep=' ') + '+00')}"


def _lake_connect(lu: LakeUri, read_only: bool, as_of: str | None = None,
                  create: bool = False) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the lake attached as ``lake`` (see the module doc)."""
    return _connect(lu, read_only, as_of, create, pin=False)[0]


def connect_pinned(lu: LakeUri) -> tuple[duckdb.DuckDBPyConnection, str | None]:
    """The lake attached read-only at the snapshot newest now, and that snapshot's number:
    read once, then attached again at it on the same connection (the extensions load once)."""
    return _connect(lu, True, None, False, pin=True)


def _connect(lu: LakeUri, read_only: bool, as_of: str | None, create: bool, pin: bool
             ) -> tuple[duckdb.DuckDBPyConnection, str | None]:
    con = duckdb.connect(":memory:", config={"autoinstall_known_extensions": False,
                                             "autoload_known_extensions": False,
                                             "allow_community_extensions": False})
    with closed_on_failure(lu, con):
        con.execute("SET enable_progress_bar = false")
        con.execute(f"SET disabled_compression_methods = {_q(NOT_TRIED_COMPRESSION)}")
        for f in extension_files():
            con.execute(f"LOAD {_q(str(f))}")
        _attach(con, lu, read_only, as_of, create)
        if pin:
            row = con.execute("SELECT id FROM lake.current_snapshot()").fetchone()
            if row is not None:
                as_of = str(int(row[0]))
                con.execute("DETACH lake")
                _attach(con, lu, True, as_of, False)
    return con, as_of


def _attach(con: duckdb.DuckDBPyConnection, lu: LakeUri, read_only: bool, as_of: str | None,
            create: bool) -> None:
    opts = []
    if lu.data_path:
        opts.append(f"DATA_PATH {_q(lu.data_path)}")
    if lu.metadata_schema:
        opts.append(f"METADATA_SCHEMA {_q(lu.metadata_schema)}")
    if as_of is not None:
        opts.append(_snapshot_opt(as_of))
    if read_only or as_of is not None:
        opts.append("READ_ONLY")
    elif not create:
        opts.append("CREATE_IF_NOT_EXISTS false")
    con.execute(f"ATTACH {_q('ducklake:' + lu.catalog)} AS lake ({', '.join(opts)})")
