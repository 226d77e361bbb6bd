"""A writer process of the concurrency and crash tests: ingests distinct CUPTI recordings.

Run: ``python -m tests.store.worker STORE FIRST COUNT DIR [--reopen]``. Recording ``k`` is the
demo's softmax CUPTI trace, its ``softmax_fwd`` launches only, with ``k`` more launches of that
kernel appended after the last record (each a copy of its first launch with its own correlation
id and times, so the file stays a plausible recording: distinct bytes, a distinct run, ``20 + k``
kernel launches). Each committed run is printed as ``landed K RUN_ID`` (``again K RUN_ID`` when
the bytes were already in the store).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from argusdb.collectors.regions import ProgramSource
from argusdb.ingest import ingest_path
from argusdb.store import open_store
from tests.conftest import DEMO, KERNELS

BASE = DEMO / "softmax" / "softmax.cupti.jsonl"
#: The program's kernel (the only one kept in the recordings).
KERNEL = "softmax_fwd"
#: Its launches in the base recording.
BASE_LAUNCHES = 20


def recording(k: int, folder: Path) -> Path:
    """Recording ``k`` (written once into ``folder``)."""
    path = folder / f"softmax-{k:04d}.cupti.jsonl"
    if not path.exists():
        lines = BASE.read_text().splitlines()
        recs = [json.loads(ln) for ln in lines if ln.strip()]
        # only the program's own kernel: launches of other kernels (torch's) would land as a
        # second run of another program (identity), and the tests count the program's runs
        foreign = [i for i, r in enumerate(recs)
                   if r.get("kind") == "CONCURRENT_KERNEL" and r.get("name") != KERNEL]
        lines = [ln for i, ln in enumerate(ln for ln in lines if ln.strip()) if i not in foreign]
        recs = [r for i, r in enumerate(recs) if i not in foreign]
        kern = next(r for r in recs if r.get("kind") == "CONCURRENT_KERNEL")
        last_end = max(int(r.get("end") or 0) for r in recs)
        last_id = max(int(r.get("correlation_id") or 0) for r in recs)
        span = int(kern["end"]) - int(kern["start"])
        extra = []
        for i in range(1, k + 1):
            start = last_end + i * (span + 1_000)
            extra.append(json.dumps({**kern, "start": start, "end": start + span,
                                     "correlation_id": last_id + i}))
        tmp = path.with_suffix(".tmp")
        tmp.write_text("\n".join([*lines, *extra]) + "\n")
        tmp.replace(path)
    return path


def main(argv: list[str]) -> None:
    store, first, count, folder = argv[0], int(argv[1]), int(argv[2]), Path(argv[3])
    reopen = "--reopen" in argv
    program = ProgramSource.from_path(KERNELS / "softmax.py")
    paths = [recording(k, folder) for k in range(first, first + count)]
    st = None if reopen else open_store(store, create=True)
    for k, p in zip(range(first, first + count), paths, strict=True):
        if reopen:
            with open_store(store, create=True) as s:
                r = ingest_path(s, p, program)
        else:
            assert st is not None
            r = ingest_path(st, p, program)
        print(f"{'again' if r.already else 'landed'} {k} {r.run_id}", flush=True)
    if st is not None:
        st.close()


if __name__ == "__main__":
    main(sys.argv[1:])
