"""The Python API: ``argusdb.connect(path)``.

Questions never write: every query, check and explanation runs in a READ ONLY DuckDB
transaction that is rolled back (also on a read-write connection, where ingests happen), and
none of them refreshes materializations. Those are refreshed where their inputs change (every
ingest) and when a read-write connection opens; a read-only connection to a stale store is
refused with the command that refreshes it.

Example:
    >>> db = argusdb.connect("argus.duckdb", read_only=True)
    >>> t = db.query("SELECT signal, count(*) AS n FROM evidence GROUP BY signal")
    >>> [f.code for f in db.check("SELECT median(value) FROM evidence")][:1]
    ['AR01']
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from argusdb.api.checked import TIMEOUT_S
from argusdb.errors import Finding, QueryRefused, StoreError, UsageError
from argusdb.store import materialize, open_store
from argusdb.store.embedded import Rows, Store
from argusdb.store.guard import MAX_BYTES, MAX_ROWS, deadline, set_overrun_handler

if TYPE_CHECKING:  # the collectors load with the first ingest, not with a question; the
    # checker (sqlglot) with the first question not kept across processes (argusdb.api.kept),
    # Arrow with the first answer read as a table
    import pyarrow as pa

    from argusdb import checker
    from argusdb.api.kept import KeptCheck
    from argusdb.collectors.regions import ProgramSource
    from argusdb.ingest import IngestResult, Prepared
    from argusdb.ingest.variants import VariantOf

#: Columns of :meth:`Connection.runs`, in order.
RUN_COLUMNS = ("run_id", "program_version", "collector", "kind", "artefact_name", "signature",
               "timing_clean", "tool_version", "device", "ingested_at")
#: Columns of :meth:`Connection.snapshots`, in order.
SNAPSHOT_COLUMNS = ("snapshot_id", "committed_at", "kind", "run_ids")

#: Most accepted reports a connection keeps (see :meth:`Connection._checked`).
KEPT_REPORTS = 128

#: ``argus -v`` shows each query's size and time (``-vv`` its text).
_log = logging.getLogger("argusdb.api")

__all__ = ["MAX_TIMEOUT_S", "Connection", "cap_process_memory", "connect", "deadline",
           "set_overrun_handler", "valid_sql", "valid_timeout"]


def cap_process_memory(max_bytes: int) -> None:
    """Cap this process's address space (Linux ``RLIMIT_AS``), never raising an existing cap.

    DuckDB's ``memory_limit`` bounds its buffers, not the lists and strings one expression
    builds (``range(1e9)`` is 8 GB); under this cap such an allocation fails as DuckDB's
    "Out of Memory Error" instead of growing the process until the kernel kills something.
    For processes that exist to answer questions (the CLI, the MCP worker); a library caller
    decides for its own process.
    """
    try:
        import resource
    except ImportError:  # not POSIX
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = max_bytes if hard == resource.RLIM_INFINITY else min(max_bytes, hard)
    if soft == resource.RLIM_INFINITY or soft > cap:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


#: Longest time limit of a question, seconds (a day): past it, waits overflow the platform's
#: clock arithmetic (``--timeout 99999999999`` ended in an OverflowError traceback).
MAX_TIMEOUT_S = 86_400.0


def valid_timeout(value: Any, name: str = "timeout") -> float:
    """``value`` as a time limit in seconds: a positive finite number, at most
    :data:`MAX_TIMEOUT_S`.

    Raises:
        UsageError: anything else (``nan``, ``inf``, ``1e309``, ``99999999999``, zero,
            negative, text).
    """
    try:
        seconds = float(value)
    except (TypeError, ValueError, OverflowError):
        seconds = math.nan
    if isinstance(value, bool) or not math.isfinite(seconds) or seconds <= 0 \
            or seconds > MAX_TIMEOUT_S:
        raise UsageError(f"{name} must be a positive, finite number of seconds, at most "
                         f"{MAX_TIMEOUT_S:g} (a day), not {value!r}; e.g. 30")
    return seconds


#: Longest query text: the checker's work grows with it, and no question needs more.
MAX_SQL_CHARS = 32_768


def valid_sql(sql: Any) -> str:
    """``sql`` as query text: a str that is valid Unicode (encodable as UTF-8), at most
    ``MAX_SQL_CHARS`` characters.

    Raises:
        UsageError: not text, too long, invalid UTF-8 (a lone surrogate), or a NUL character.
    """
    if not isinstance(sql, str):
        raise UsageError(f"the query must be text (str), not {type(sql).__name__}")
    if len(sql) > MAX_SQL_CHARS:
        raise UsageError(f"the query is {len(sql):,} characters long, more than "
                         f"{MAX_SQL_CHARS:,}; ask a shorter question (put long value lists "
                         f"in a subquery over the store)")
    try:
        sql.encode("utf-8")
    except UnicodeEncodeError as exc:
        line = sql.count("\n", 0, exc.start) + 1
        raise UsageError(f"the query is not valid UTF-8 (an undecodable byte or lone "
                         f"surrogate at character {exc.start + 1}, line {line}); write it "
                         f"in UTF-8") from None
    if "\x00" in sql:
        raise UsageError(f"the query contains a NUL character (at character "
                         f"{sql.index(chr(0)) + 1}); remove it")
    return sql


class Connection:
    """A connection to one store; user SQL is checked before it runs, read-only.

    Args:
        path: the store file.
        create: make the store when missing.
        read_only: open the file read-only (DuckDB then refuses every write itself, and other
            read-only processes may open it too). A store whose materializations are stale is
            refused: open it read-write once (``argus conserve STORE``) to refresh them.
        timeout_s: time limit of one query, seconds (a positive finite number).
        max_rows: the most rows one answer may have (:meth:`query` raises beyond it).
        max_bytes: the most bytes one answer may have.
        as_of: answer as the store stood at this snapshot (number) or time (ISO, UTC);
            read-only.
        lock_timeout: seconds to wait for another process's lock on an embedded store
            (default: ARGUS_LOCK_TIMEOUT, else 120).
        require_fresh: refuse a read-only open of a stale store (the default); False for
            callers that read only what ingest wrote (:meth:`runs`, :meth:`snapshots`).
        memory_limit: DuckDB's memory limit for this connection (default ``Store``'s, 4GB),
            e.g. ``"512MB"``: ``argus ingest`` bounds a large artefact's rows with it
            (:data:`argusdb.ingest.INGEST_MEMORY_LIMIT`; DuckDB writes a transaction's rows
            to the store file once they pass it). With it, what a statement holds beyond it
            spills to ``STORE.tmp`` beside an embedded store (a question's connection never
            spills).
        cpu_time: the time limit passes once both its wall seconds and the process's CPU
            seconds have (:data:`argusdb.store.guard.WALL_BACKSTOP`), so a busy machine
            slows an answer and does not refuse it: what ``argus diff``, ``report``,
            ``trajectory`` and ``export`` open. Default: wall seconds only.
        threads: DuckDB's threads for this connection (default ``Store``'s, 2): ``argus
            ingest`` appends on one while it parses beside the appends, on more where every
            row was parsed ahead (:attr:`argusdb.ingest.Prepared.append_threads`).
    """

    def __init__(self, path: str | Path, create: bool = False, read_only: bool = False,
                 timeout_s: float = TIMEOUT_S, max_rows: int = MAX_ROWS,
                 max_bytes: int = MAX_BYTES, as_of: str | None = None,
                 lock_timeout: float | None = None, require_fresh: bool = True,
                 memory_limit: str | None = None, threads: int | None = None,
                 cpu_time: bool = False) -> None:
        self.timeout_s = valid_timeout(timeout_s)
        self._cpu_time = bool(cpu_time)
        self.max_rows = int(max_rows)
        self.max_bytes = int(max_bytes)
        if read_only and create:
            raise UsageError(f"{path}: a store cannot be created read-only; drop read_only "
                             f"or create it first with 'argus init {path}'")
        if as_of is not None:
            read_only = True  # a snapshot is answered, never written
        self.store = open_store(path, create=create, read_only=read_only,
                                as_of=None if as_of is None else str(as_of),
                                lock_timeout=lock_timeout,
                                on_upgrade=_refresh_metadata)
        if threads is not None:   # the lock-down below applies it
            self.store.threads = self.store.append_threads = int(threads)
        if memory_limit is not None:   # the lock-down below applies both
            self.store.memory_limit = memory_limit
            if Path(self.store.path).is_file():
                self.store.spill_directory = f"{self.store.path}.tmp"
        try:
            if read_only and require_fresh:
                self._require_fresh()
            else:
                # The writer refreshes: a store built by an older argusdb, or written by a
                # path that skipped the refresh, is brought up to date before any question.
                materialize.ensure_fresh(self.store)
                _refresh_metadata(self.store)
        except BaseException:
            self.store.close()
            raise
        #: What questions run on: the store itself when read-only, else a read-only view of
        #: it (no check or query writes, not even the checker's metadata summaries).
        self._questions = self.store if read_only else self.store.reader()
        self.store.count_cpu = self._questions.count_cpu = self._cpu_time
        #: Accepted reports by (store write generation, query text): see :meth:`_checked`;
        #: answers to questions over facts only: see :meth:`facts`.
        self._reports: dict[tuple[int, str], checker.Report | KeptCheck] = {}
        self._facts: dict[tuple[int, str], pa.Table] = {}
        #: Whether accepted checks are kept across processes (:mod:`argusdb.api.kept`): only
        #: for a read-only connection to an embedded store file, which no process can write
        #: while it is open, or to a shared store pinned to a snapshot, which never changes.
        self._kept_across = read_only and (as_of is None or type(self.store) is not Store)
        self._identity: str | None = None

    @property
    def cpu_time(self) -> bool:
        """Whether time limits count CPU as well as wall seconds (see ``cpu_time`` above);
        settable between calls: the MCP worker counts CPU for the built-in answers only."""
        return self._cpu_time

    @cpu_time.setter
    def cpu_time(self, on: bool) -> None:
        self._cpu_time = self.store.count_cpu = self._questions.count_cpu = bool(on)

    def _require_fresh(self) -> None:
        try:
            materialize.ensure_fresh(self.store)  # read-only: raises when stale, never writes
        except StoreError as exc:
            p = self.store.path
            raise StoreError(f"{p}: its attribution or derivation was built from other inputs "
                             f"or by another argusdb version, and a read-only connection never "
                             f"writes. Refresh it once read-write ('argus conserve {p}' or "
                             f"argusdb.connect('{p}')), then open it read-only.") from exc

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ingest(self, path: str | Path, program: str | Path | None = None,
               options: dict[str, str] | None = None) -> IngestResult:
        """Ingest one artefact (see :meth:`ingest_many`)."""
        return self.ingest_many([path], program, options)[0]

    def ingest_many(self, paths: Sequence[str | Path],
                    program: str | Path | ProgramSource | None = None,
                    options: dict[str, str] | None = None, *, variant: VariantOf | None = None,
                    launch: dict[str, Any] | None = None,
                    progress: Callable[[IngestResult], None] | None = None,
                    prepared: Prepared | None = None,
                    progress_rows: Callable[[int], None] | None = None) -> list[IngestResult]:
        """Ingest the artefacts of one command, each as one run, in one transaction (see
        :func:`argusdb.ingest.ingest_paths`; ``prepared`` is the command already read and
        checked by :func:`argusdb.ingest.prepare`). The ingest refreshes the materializations
        in its own transaction, and the checker's metadata after it: ``argus ingest`` is this
        call. ``program`` is the kernel source (a path, or one already read); ``progress``
        and ``progress_rows`` follow it (per artefact written, per batch of rows taken).

        Raises:
            UsageError: the connection is read-only.
            InputError: unknown, corrupt, mismatching or conflicting input; nothing written.
        """
        from argusdb.collectors.regions import ProgramSource
        from argusdb.ingest import ingest_paths

        self._writable("ingest")
        src = program if isinstance(program, ProgramSource) or program is None \
            else ProgramSource.from_path(program)
        results = ingest_paths(self.store, list(paths), src, options, variant, launch=launch,
                               progress=progress, prepared=prepared,
                               progress_rows=progress_rows)
        # Without run names the summary takes the new runs' observed rows and every
        # attributed/derived row (a refresh may have rebuilt any version's, e.g. a parent's
        # derived rows when its variant's runs land).
        if any(not r.already for r in results):
            _refresh_metadata(self.store)
        return results

    def record_variant_check(self, variant_version: str, parent_version: str, rel_err: float,
                             tolerance: float = 1e-5, task_id: str | None = None) -> bool:
        """Record a result check of a variant against its parent (derivation uses a variant
        only while its latest check passed); refreshes derivation and the checker's metadata.

        Returns:
            Whether the check passed (``rel_err <= tolerance``).

        Raises:
            UsageError: the connection is read-only, or the variant is not bound to that
                parent.
        """
        from argusdb.ingest.variants import record_check

        self._writable("record a variant check")
        passed = record_check(self.store, variant_version, parent_version, rel_err, tolerance,
                              task_id)
        _refresh_metadata(self.store)
        return passed

    def ingest_launch(self, paths: Sequence[str | Path], program: str | Path | None = None,
                      options: dict[str, str] | None = None,
                      launch_group: str | None = None) -> Any:
        """Ingest the artefacts of one multi-process launch (see
        :func:`argusdb.ingest.ranks.ingest_launch`), then refresh the checker's metadata
        as :meth:`ingest_many` does."""
        from argusdb.collectors.regions import ProgramSource
        from argusdb.ingest.ranks import ingest_launch

        self._writable("ingest")
        src = ProgramSource.from_path(program) if program else None
        result = ingest_launch(self.store, list(paths), src, options or {}, launch_group)
        _refresh_metadata(self.store)
        return result

    def runs(self) -> pa.Table:
        """The store's runs, oldest first (:data:`RUN_COLUMNS`: identity, version, collector,
        interference signature, tool version, device, ingest time)."""
        return self.store.arrow(f"SELECT {', '.join(RUN_COLUMNS)} FROM run ORDER BY run_seq")

    def program_versions(self) -> list[dict[str, Any]]:
        """The store's program versions (``program_version``, ``program``, ``options``,
        ``transform``), ordered by ID: the rows the checker resolves ``version_diff``'s
        selectors against, read once per store write generation (what ``argus diff``,
        ``report`` and ``trajectory`` resolve their version selectors against too)."""
        from argusdb.api.metadata import StoreMetadata

        return [dict(r) for r in StoreMetadata.of(self._questions).program_versions()]

    def snapshots(self) -> pa.Table:
        """The store's snapshots, oldest first (:data:`SNAPSHOT_COLUMNS`): each committed
        ingest, when, and the runs it added (what ``as_of`` takes)."""
        import pyarrow as pa

        rows = self.store.snapshots()
        return pa.Table.from_pylist([{c: r[c] for c in SNAPSHOT_COLUMNS} for r in rows]) \
            if rows else pa.table({c: pa.array([], pa.string()) for c in SNAPSHOT_COLUMNS})

    def conservation(self, summary: bool = False) -> pa.Table:
        """Conservation of attributed evidence (view ``attribution_conservation``): per run,
        kernel and signal, observed against attributed totals and ``ok``; with ``summary``
        one row per run and kernel (``signals``, ``conserved``, ``max_abs_difference``)."""
        if summary:
            return self.store.arrow("SELECT * FROM attribution_conservation_summary "
                                    "ORDER BY run_id, kernel")
        return self.store.arrow("SELECT * FROM attribution_conservation "
                                "ORDER BY run_id, kernel, signal")

    def _writable(self, what: str) -> None:
        if self.store.read_only:
            raise UsageError(f"{self.store.path} is open read-only; open it with "
                             f"argusdb.connect(path) to {what}")

    def check(self, sql: str) -> list[Finding]:
        """Findings of the compatibility checker for ``sql`` (empty when it may run)."""
        from argusdb.api import checked

        return checked.check(valid_sql(sql), self._questions)

    def query(self, sql: str, limit: int | None = None) -> pa.Table:
        """Check ``sql`` and run it read-only; raises QueryRefused with the findings if refused.

        Args:
            sql: one SELECT.
            limit: return at most this many rows (like SQL's LIMIT); None: the whole answer,
                which must fit in ``max_rows`` rows and ``max_bytes`` bytes.

        Raises:
            QueryRefused: the checker refused it (``.findings`` says why and what to do).
            QueryFailed: DuckDB rejected it, it ran past the time limit, or (without
                ``limit``) its answer is larger than the connection's caps.
        """
        table, _ = self.query_with_provenance(sql, limit)
        return table

    def df(self, sql: str, limit: int | None = None) -> Any:
        """:meth:`query`'s answer as a pandas DataFrame (``pip install 'argusdb[dataframe]'``).

        Example:
            >>> with argusdb.connect("argus.duckdb", read_only=True) as db:
            ...     frame = db.df("SELECT collector, count(*) AS n FROM run GROUP BY collector")
            >>> sorted(frame.columns)
            ['collector', 'n']
        """
        return _frame("pandas", self.query(sql, limit))

    def pl(self, sql: str, limit: int | None = None) -> Any:
        """:meth:`query`'s answer as a polars DataFrame (``pip install 'argusdb[dataframe]'``).
        """
        return _frame("polars", self.query(sql, limit))

    def query_with_provenance(self, sql: str, limit: int | None = None
                              ) -> tuple[pa.Table, dict[str, Any]]:
        """Like :meth:`query`, also returning :meth:`explain`'s provenance of the answer;
        with ``limit`` its ``truncated`` entry says why the answer was cut (else None)."""
        report, check_s = self._checked_within(valid_sql(sql))
        ((table, cut),) = self._run(check_s, [report], limit)
        prov = report.provenance()
        prov["truncated"] = cut
        _log.debug("query: %s", sql)
        return table, prov

    def query_rows(self, sql: str, limit: int | None = None) -> tuple[Rows, dict[str, Any]]:
        """:meth:`query_with_provenance` with the answer as Python rows
        (:class:`~argusdb.store.guard.Rows`: ``columns`` and ``rows``): what ``argus query``
        prints. Neither Arrow nor, for a question kept across processes
        (:mod:`argusdb.api.kept`), the checker is loaded."""
        report, check_s = self._checked_within(valid_sql(sql))
        ((rows, cut),) = self._run(check_s, [report], limit, as_rows=True)
        prov = report.provenance()
        prov["truncated"] = cut
        _log.debug("query: %s", sql)
        return rows, prov

    def queries(self, sqls: Sequence[str], facts: Collection[str] = ()) -> list[pa.Table]:
        """:meth:`query` of several independent questions, whose statements run at the same
        time, each on a cursor of its own (DuckDB runs them side by side; on an idle machine
        on separate cores). Every question is checked before any runs, and each answer has
        the caps it would have alone; the time limit covers the whole call. The questions
        named in ``facts`` are answered as :meth:`facts` answers them (kept per store
        generation; refused when they read evidence).

        Raises:
            QueryRefused: the checker refused one of them (nothing runs).
            UsageError: a question named in ``facts`` reads evidence.
            QueryFailed: as :meth:`query`, for any of them.
        """
        gen = self._questions.generation
        answers = {s: self._facts[(gen, s)] for s in sqls
                   if s in facts and (gen, s) in self._facts}
        todo = list(dict.fromkeys(s for s in sqls if s not in answers))
        from argusdb.api import checked

        with checked.check_budget(self.timeout_s) as spent:
            # an accepted check may be kept across processes (:mod:`argusdb.api.kept`): a
            # facts question's with whether it reads evidence
            reports = [self._checked(valid_sql(s), across=True) for s in todo]
        for s, report in zip(todo, reports, strict=True):
            if s in facts and _reads_evidence(report):
                raise UsageError("Connection.facts answers questions over facts only (run, "
                                 "task, plan, program_version ...); ask about evidence with "
                                 "query()")
        for s, (table, _) in zip(todo, self._run(spent.seconds, reports, None), strict=True):
            answers[s] = table
            if s in facts:
                _keep(self._facts, gen, s, table)
        return [answers[s] for s in sqls]

    def _run(self, check_cpu_s: float, reports: Sequence[checker.Report | KeptCheck],
             limit: int | None, as_rows: bool = False) -> list[tuple[Any, str | None]]:
        """Run accepted reports' statements together within what is left of the time limit
        once the checks' CPU seconds are taken off it (:func:`checked.run_reports`); without
        ``limit`` an answer past the caps raises."""
        from argusdb.api import checked

        start = time.monotonic()
        out = checked.run_reports(self._questions, reports, check_cpu_s, self.timeout_s,
                                  self.max_rows, self.max_bytes, limit, as_rows=as_rows)
        for table, _ in out:
            _log.info("query: %d rows in %.3f s", table.num_rows, time.monotonic() - start)
        return out

    def _store_identity(self) -> str | None:
        """What keys this store's kept checks (:mod:`argusdb.api.kept`), or None: none kept.
        An embedded file's identity is read at each question (its size and times); a shared
        store's snapshot once (it is pinned for the connection's life)."""
        from argusdb.api import kept as across_processes

        if not self._kept_across:
            return None
        if type(self.store) is Store:
            return across_processes.store_identity(self.store.path)
        if self._identity is None:
            self._identity = self.store.snapshot_identity() or ""
        return self._identity or None

    def _kept(self, sql: str, across: bool = False) -> checker.Report | KeptCheck | None:
        """The accepted check of ``sql`` kept by this connection for the store's generation,
        or (with ``across``) by an earlier process (:mod:`argusdb.api.kept`); None if none."""
        from argusdb.api import kept as across_processes

        gen = self._questions.generation
        kept = self._reports.get((gen, sql))
        if kept is not None and (across or not isinstance(kept, across_processes.KeptCheck)):
            return kept
        identity = self._store_identity() if across else None
        if identity is not None and (hit := across_processes.load(identity, sql)) is not None:
            _keep(self._reports, gen, sql, hit)
            return hit
        return None

    def _checked_within(self, sql: str) -> tuple[checker.Report | KeptCheck, float]:
        """:meth:`_checked` with ``across``, and the CPU seconds the check used: a kept check
        none (the checker does not load); a new one runs within the time limit in CPU seconds
        (:func:`argusdb.api.checked.check_budget`)."""
        if (hit := self._kept(sql, across=True)) is not None:
            return hit, 0.0
        from argusdb.api import checked

        with checked.check_budget(self.timeout_s) as spent:
            report = self._checked(sql, across=True)
        return report, spent.seconds

    def _checked(self, sql: str, across: bool = False) -> checker.Report | KeptCheck:
        """The checker's report of ``sql``, accepted, or QueryRefused with its findings.

        An accepted report is kept for the store's write generation (at most
        :data:`KEPT_REPORTS`): the same text asked again on unchanged data runs without being
        parsed and analysed again. That is sound because the verdict is a function of the text,
        the catalog (this code) and the data, and the data change only with the generation
        (every write through this store, and every metadata refresh, bumps it; a read-only
        store cannot be written by another process while it is open). With ``across`` (a
        question that only runs and tells its provenance) an accepted check is also kept for
        later processes (:mod:`argusdb.api.kept`, keyed by the store file's identity and the
        code), and may come back as a :class:`~argusdb.api.kept.KeptCheck`. Refusals are
        judged afresh. :meth:`check` and :meth:`explain` always analyse."""
        from argusdb.api import kept as across_processes

        if (hit := self._kept(sql, across)) is not None:
            return hit
        gen = self._questions.generation
        identity = self._store_identity() if across else None
        from argusdb import checker
        from argusdb.api import checked

        report = checker.analyse(sql, checked.metadata_of(self._questions))
        if not report.ok:
            raise QueryRefused(report.findings)
        _keep(self._reports, gen, sql, report)
        if identity is not None:
            across_processes.save(identity, sql, report.executable, report.provenance(),
                                  reads_evidence=_reads_evidence(report))
        return report

    def facts(self, sql: str) -> pa.Table:
        """:meth:`query`'s answer to a question that reads no evidence (facts of runs, tasks,
        plans, program versions), kept for the store's write generation like its report
        (:meth:`_checked`): asked again on unchanged data it is not run again.

        Raises:
            UsageError: the question reads evidence (ask it with :meth:`query`).
            QueryRefused, QueryFailed: as :meth:`query`.
        """
        return self.queries([sql], facts=(sql,))[0]

    def explain(self, sql: str) -> dict[str, Any]:
        """The provenance an answer would rest on: program versions, runs, tasks, evidence
        classes, interference signatures, replay passes, scopes, constructs and
        acknowledgements; with the findings when it would be refused."""
        from argusdb.api import checked

        return checked.explain(valid_sql(sql), self._questions)


def _reads_evidence(report: checker.Report | KeptCheck) -> bool:
    """Whether an accepted question reads evidence (a base stream), as its check found (a kept
    check recorded it); what :meth:`Connection.facts` refuses."""
    from argusdb.api.kept import KeptCheck

    if isinstance(report, KeptCheck):
        return report.reads_evidence
    return report.context is None or any(st.base for st in report.context.streams)


def _refresh_metadata(store: Store) -> None:
    """:func:`argusdb.api.checked.refresh_metadata` (a write path: it loads the checker)."""
    from argusdb.api import checked

    checked.refresh_metadata(store)


def _keep(kept: dict[tuple[int, str], Any], gen: int, sql: str, value: Any) -> None:
    """Keep ``value`` for (``gen``, ``sql``): entries of older generations are dropped, and
    the oldest beyond :data:`KEPT_REPORTS`."""
    if len(kept) >= KEPT_REPORTS or any(g != gen for g, _ in kept):
        for key in [k for k in kept if k[0] != gen]:
            del kept[key]
        while len(kept) >= KEPT_REPORTS:
            kept.pop(next(iter(kept)))
    kept[(gen, sql)] = value


def connect(path: str | Path, create: bool = False, read_only: bool = False,
            timeout_s: float = TIMEOUT_S, max_rows: int = MAX_ROWS,
            max_bytes: int = MAX_BYTES, as_of: str | None = None,
            lock_timeout: float | None = None, require_fresh: bool = True,
            memory_limit: str | None = None, threads: int | None = None,
            cpu_time: bool = False) -> Connection:
    """Open the store at ``path`` (a DuckDB file or a ``ducklake:`` URI; ``create=True`` makes
    it when missing; ``as_of`` a snapshot number or time opens it as it stood then; see
    :class:`Connection` for the rest)."""
    return Connection(path, create=create, read_only=read_only, timeout_s=timeout_s,
                      max_rows=max_rows, max_bytes=max_bytes, as_of=as_of,
                      lock_timeout=lock_timeout, require_fresh=require_fresh,
                      memory_limit=memory_limit, threads=threads, cpu_time=cpu_time)


def _frame(library: str, table: pa.Table) -> Any:
    """``table`` as a ``pandas`` or ``polars`` DataFrame; a clear error when it is missing."""
    import importlib

    try:
        lib = importlib.import_module(library)
    except ImportError as exc:
        raise UsageError(f"{library} is not installed ({exc}); install it with "
                         f"pip install 'argusdb[dataframe]'") from exc
    return table.to_pandas() if library == "pandas" else lib.from_arrow(table)
