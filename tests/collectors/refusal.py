"""The refusal a collector owes a bad artefact: an InputError, and nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from argusdb.errors import InputError
from argusdb.ingest import ingest_path
from argusdb.store.embedded import Store


def refused(store: Store, path: Path, match: str | None = None) -> InputError:
    """The error of ingesting ``path`` into ``store`` (its message matching ``match``), once
    it is checked that the refusal wrote nothing: no run, no observed evidence.

    Example:
        >>> err = refused(store, tmp_path / "cut.sqlite")  # doctest: +SKIP
        >>> "truncated or corrupt" in err.fix  # doctest: +SKIP
    """
    with pytest.raises(InputError, match=match) as err:
        ingest_path(store, path)
    assert store.rows("SELECT count(*) AS n FROM run") == [{"n": 0}]
    assert store.rows("SELECT count(*) AS n FROM observed_evidence") == [{"n": 0}]
    return err.value
