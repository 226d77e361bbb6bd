"""An artefact's Arrow batches gathered into one table per evidence table, for assertions."""

from __future__ import annotations

import pyarrow as pa

from argusdb.collectors.base import Artefact


def tables(art: Artefact) -> dict[str, pa.Table]:
    """Every batch of ``art``, by the table it goes to.

    Example:
        >>> sorted(tables(NsysSqliteReader().read(EXPORT)))  # doctest: +SKIP
        ['evidence', 'kernel_launch']
    """
    out: dict[str, list[pa.RecordBatch]] = {}
    for name, batch in art.batches():
        out.setdefault(name, []).append(batch)
    return {k: pa.Table.from_batches(v) for k, v in out.items()}
