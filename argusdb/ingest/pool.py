"""Reading the artefacts of one ingest command, on more than one core where that pays.

``argus ingest STORE A B C ...`` reads and checks every file before it opens the store (a
refused file leaves the store as it was). With many small files and a core to spare, the files
are read in worker processes: each worker checks its files (the reader's ``read``) and parses
their rows (``batches()``), and hands the rows back as Arrow IPC files in a temporary folder,
which the command maps back without copying (the page cache holds them, not the process). The
artefacts come back in the order given, the rows of each as the reader yields them, so the
store receives the same rows as from a serial read; a refused file refuses the command with the
error of the first bad file in that order, as a serial read does.

Files larger than :data:`SMALL_BYTES`, and those past :data:`PARSE_BYTES` of input, are read in
the command's own process as before (their rows stream as the store takes them).

Example:
    >>> arts = read_artefacts([Path("a.source.csv"), Path("b.source.csv")])  # doctest: +SKIP
    >>> [a.kind for a in arts.artefacts]  # doctest: +SKIP
    ['ncu.source_csv', 'ncu.source_csv']
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import time
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from argusdb import environment
from argusdb.collectors import detect
from argusdb.collectors.base import Artefact

if TYPE_CHECKING:
    from concurrent.futures import Future

# multiprocessing and concurrent.futures.process are imported where workers start: importing
# them registers exit handlers, which a module imported while the interpreter shuts down
# (the launcher's hooks write their record then) may no longer do.

#: At least this many small files before the command starts worker processes (a process
#: costs a fork and the hand-back of its rows; a handful of files is read faster in place).
MIN_FILES = 8
#: A file up to this size (bytes) is small: read and parsed whole by a worker.
SMALL_BYTES = 16 << 20
#: Input bytes of small files parsed ahead by the workers, all together: an ncu source page
#: becomes about 19 times its size in Arrow (85 kB -> 1.6 MB), so this bounds the temporary
#: folder to about 1.2 GB. Files past it are checked in place and parsed as they are written.
PARSE_BYTES = 64 << 20
#: Environment variable that fixes the number of worker processes (0 or 1: read in place),
#: whatever the cores and the load; unset, :func:`workers_for` decides.
WORKERS_ENV = environment.INGEST_WORKERS.name


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the platform states it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def spare_cores() -> float:
    """Usable cores less the tasks of other work ready to run on them now: Linux's count of
    running tasks (``procs_running`` in ``/proc/stat``, this process's one excepted; the
    median of three looks 5 ms apart, so one burst does not decide), else, where the
    platform has no such count, the one-minute load average. 0 or less on a busy machine."""
    looks: list[int] = []
    for k in range(3):
        try:
            with open("/proc/stat", "rb") as fh:
                looks += [int(line.split()[1]) for line in fh if line.startswith(b"procs_running")]
        except (OSError, ValueError, IndexError):
            break
        if k < 2:
            time.sleep(0.005)
    if looks:
        return usable_cores() - (sorted(looks)[len(looks) // 2] - 1)
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = 0.0
    return usable_cores() - load


def workers_for(sizes: Sequence[int], spare: float | None = None) -> int:
    """Worker processes for a command whose files have ``sizes`` (bytes): 0 (read in place)
    unless there are :data:`MIN_FILES` small files and two cores or more that no other work
    is ready to run on (:func:`spare_cores` >= 2); then one per spare core, at most one per
    small file. :data:`WORKERS_ENV` overrides the choice. ``spare``: :func:`spare_cores`,
    where the caller looked already."""
    small = sum(1 for s in sizes if s <= SMALL_BYTES)
    fixed = os.environ.get(WORKERS_ENV, "").strip()
    if fixed:
        n = int(fixed)
        return n if n >= 2 and small and _can_fork() else 0
    if small < MIN_FILES or usable_cores() < 2:
        return 0
    idle = int(spare_cores() if spare is None else spare)
    return min(idle, small) if idle >= 2 and _can_fork() else 0


#: Most DuckDB threads for the appends when every row was parsed ahead. One: on an idle
#: 2-core machine (load 1.2) 100 source pages parsed by two workers were written in 4.18 s
#: (5.04 s CPU) on one thread and 5.11 s (7.94 s CPU) on two
#: (``bench/bench_ingest_many.py --files 100``).
APPEND_THREADS_AHEAD = 1


@dataclass
class ReadArtefacts:
    """The artefacts of a command, read and checked, in the order given."""

    artefacts: list[Artefact]
    #: Worker processes that read them (0: read in place).
    workers: int = 0
    #: Whether every artefact's rows were parsed ahead (nothing left to parse while writing).
    parsed_ahead: bool = False
    #: DuckDB threads for the appends: one while rows are parsed beside them; where every
    #: row was parsed ahead, the cores other work left idle when the command began (at most
    #: one per worker and :data:`APPEND_THREADS_AHEAD`).
    append_threads: int = 1


def read_artefacts(paths: Sequence[Path], workers: int | None = None) -> ReadArtefacts:
    """Detect, read and check every file of ``paths`` (see the module docstring).

    ``workers`` fixes the worker processes (0: read in place); None lets :func:`workers_for`
    choose from the files, the cores and the load.

    Raises:
        InputError: the first file, in the order given, that cannot be ingested.
    """
    paths = [Path(p) for p in paths]
    sizes = [_size(p) for p in paths]
    # (a look at the running tasks takes 10 ms: only where workers may start)
    may = workers or os.environ.get(WORKERS_ENV) or \
        sum(1 for s in sizes if s <= SMALL_BYTES) >= MIN_FILES
    spare = spare_cores() if may else 0.0
    n = workers_for(sizes, spare) if workers is None else (workers if workers >= 2 else 0)
    n = n if n and _can_fork() else 0
    if not n:
        return ReadArtefacts([detect(p).read(p) for p in paths])
    spool = _Spool()
    budget = PARSE_BYTES
    jobs: list[tuple[int, bool]] = []     # (index, parse its rows too)
    for i, size in enumerate(sizes):
        if size <= SMALL_BYTES:
            parse = size <= budget
            budget -= size if parse else 0
            jobs.append((i, parse))
    pooled = {i for i, _ in jobs}
    out: list[Artefact | BaseException | None] = [None] * len(paths)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # fork: the workers start at once with the readers imported; they run readers only
    # (Python and Arrow), never DuckDB.
    with ProcessPoolExecutor(min(n, len(jobs)),
                             mp_context=multiprocessing.get_context("fork")) as pool:
        futures: dict[int, Future[_Read]] = {
            i: pool.submit(_read, str(paths[i]), spool.folder if parse else None, i)
            for i, parse in jobs}
        # Large files (and everything else) in place, while the workers read.
        for i, p in enumerate(paths):
            if i not in pooled:
                out[i] = _attempt(lambda p=p: detect(p).read(p))
        for i, fut in futures.items():
            out[i] = _attempt(lambda fut=fut, i=i: _artefact(fut.result(), paths[i], spool))
            if isinstance(out[i], BaseException):
                pool.shutdown(wait=True, cancel_futures=True)
                break
    arts: list[Artefact] = []
    for got in out:
        if isinstance(got, BaseException):
            raise got
        if got is None:   # after the first refused file: never reached (raised above)
            break
        arts.append(got)
    ahead = all(parse for _, parse in jobs) and len(jobs) == len(paths)
    threads = max(1, min(n, int(spare), APPEND_THREADS_AHEAD)) if ahead else 1
    return ReadArtefacts(arts, n, ahead, threads)


def _can_fork() -> bool:
    """Whether workers start by fork: a worker started afresh imports argusdb again (100 pages
    read and parsed by two forkserver workers took 4.2 and 5.8 s, in place 1.8 and 2.5 s, at
    load 4-5), so without fork (Windows) the files are read in place."""
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0   # missing: detect() says so, in its turn


def _attempt(fn: Any) -> Any:
    try:
        return fn()
    except Exception as exc:  # raised in the caller's order (read_artefacts)
        return exc


#: What a worker hands back: the artefact's fields (its batches excepted), and the IPC files
#: of its batches in order with their table (None: not parsed ahead).
_Read = tuple[dict[str, Any], list[tuple[str, str]] | None]


def _read(path: str, folder: str | None, index: int) -> _Read:
    """In a worker: read and check ``path``; with ``folder``, write its batches there."""
    p = Path(path)
    art = detect(p).read(p)
    fields = {f.name: getattr(art, f.name) for f in dataclasses.fields(art)
              if f.name != "batches"}
    if folder is None:
        return fields, None
    files = []
    for j, (table, batch) in enumerate(art.batches()):
        name = os.path.join(folder, f"{index}.{j}.arrow")
        with pa.OSFile(name, "wb") as sink, pa.ipc.new_file(sink, batch.schema) as w:
            w.write_batch(batch)
        files.append((table, name))
    return fields, files


class _Spool:
    """The temporary folder of the batches the workers parsed; removed when the last artefact
    that reads from it is let go (the maps stay valid after the files go: POSIX)."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="argus-ingest-")
        weakref.finalize(self, shutil.rmtree, self.folder, True)


def _artefact(got: _Read, path: Path, spool: _Spool) -> Artefact:
    fields, files = got
    if files is None:
        # Checked by the worker; its rows are read here again, as they are written.
        return Artefact(**fields, batches=lambda: detect(path).read(path).batches())
    return Artefact(**fields, batches=lambda: _mapped(spool, files))


def _mapped(_spool: _Spool, files: list[tuple[str, str]]
            ) -> Iterator[tuple[str, pa.RecordBatch]]:
    # (_spool: the folder lives while these batches may be read)
    for table, name in files:
        with pa.memory_map(name) as src:
            yield table, pa.ipc.open_file(src).get_batch(0)
