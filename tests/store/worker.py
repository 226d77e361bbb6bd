"""A writer process of the concurrency and crash tests: ingests distinct CUPTI recordings.

Run: ``python -m tests.store.worker STORE FIRST COUNT DIR [--reopen]``. Recording ``k`` is the
demo's softmax CUPTI trace with its first kernel record repeated ``k`` more times (distinct
bytes, so a distinct run, with ``27 + k`` kernel launches). Each committed run is printed as
``landed K RUN_ID`` (``again K RUN_ID`` when the bytes were already in the store).
"""

from __future__ import annotations

import sys
from pathlib import Path

from argusdb.ingest import ingest_path
from argusdb.regions import ProgramSource
from argusdb.store import Store
from tests.conftest import DEMO, KERNELS

BASE = DEMO / "softmax" / "softmax.cupti.jsonl"
#: Kernel launches in the base recording.
BASE_LAUNCHES = 27


def recording(k: int, folder: Path) -> Path:
    """Recording ``k`` (written once into ``folder``)."""
    path = folder / f"softmax-{k:04d}.cupti.jsonl"
    if not path.exists():
        lines = BASE.read_text().splitlines()
        kern = next(ln for ln in lines if "CONCURRENT_KERNEL" in ln)
        tmp = path.with_suffix(".tmp")
        tmp.write_text("\n".join([*lines, *([kern] * k)]) + "\n")
        tmp.replace(path)
    return path


def main(argv: list[str]) -> None:
    store, first, count, folder = argv[0], int(argv[1]), int(argv[2]), Path(argv[3])
    reopen = "--reopen" in argv
    program = ProgramSource.from_path(KERNELS / "softmax.py")
    paths = [recording(k, folder) for k in range(first, first + count)]
    st = None if reopen else Store.open(store, create=True)
    for k, p in zip(range(first, first + count), paths, strict=True):
        if reopen:
            with Store.open(store, create=True) as s:
                r = ingest_path(s, p, program)
        else:
            assert st is not None
            r = ingest_path(st, p, program)
        print(f"{'again' if r.already else 'landed'} {k} {r.run_id}", flush=True)
    if st is not None:
        st.close()


if __name__ == "__main__":
    main(sys.argv[1:])
