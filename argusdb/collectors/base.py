"""The one contract every collector follows.

A collector is a package under ``argusdb/collectors/`` named after its tool (``ncu``, ``nvdisasm``,
``triton``, ``cupti``, ``kineto``, ``proton``, ``nsys``). It exposes one module-level object
``READERS``: a list of :class:`Reader`. A reader recognises an artefact from its content
(``sniff``) and turns it into an :class:`Artefact`: metadata plus a stream of Arrow record batches
named after the tables of ``argusdb/schema/``. Collectors never import duckdb and never see the
store; ingest adds the keys (program version, task, run, region) before the store appends the
batches; the columns of each batch are those ``argusdb/schema/`` declares
(:func:`argusdb.schema.shape.batch_schema`).

Example:
    >>> from argusdb.collectors import detect
    >>> art = detect("softmax.source.csv").read("softmax.source.csv")
    >>> sorted({table for table, batch in art.batches()})
    ['evidence', 'instruction']
"""

from __future__ import annotations

import codecs
import functools
import gzip
import hashlib
import io
import json
import zlib
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Protocol

import pyarrow as pa

from argusdb.errors import InputError
from argusdb.schema import shape

#: The UTF-8 byte-order mark some editors and Windows tools write before text.
BOM = codecs.BOM_UTF8

#: Scope columns every evidence row carries; ``'all'`` where a coordinate does not apply.
#: ``rank`` (the process of a multi-process launch) is outermost, then the launch of a kernel,
#: then the coordinates inside one launch (:data:`INTRA_KERNEL_SCOPE`). Read from the
#: ``@scope`` columns of ``schema/`` (:mod:`argusdb.schema.shape`), the one list.
SCOPE_COLUMNS = shape.SCOPE
#: Scope coordinates inside one kernel launch (they nest: a value at one of them is a slice).
INTRA_KERNEL_SCOPE = shape.INTRA_KERNEL_SCOPE

#: Columns of the ``evidence`` batches a collector yields: ``observed_evidence`` less the
#: columns ingest fills (``@key``), typed as the DDL types them.
EVIDENCE_SCHEMA = shape.batch_schema("evidence")


@dataclass
class Interference:
    """What was active while a run was measured, as the tool reports it.

    A clean timing run has only ``activity_tracing`` set. Anything else perturbs timing:
    torch.profiler's host-op tracing too (seen on 2 H200s: an overlapped tensor-parallel step
    ran 38 times slower under it while the serial version did not change). ``launch_replay``:
    the kernel ran as a replay of a captured launch, out of its program (restored inputs, other
    caches, no neighbouring kernels; :mod:`argusdb.observe.runner.replay`): its durations are
    not the program's, a standing of their own (``timing_clean`` is False; a derivation pairs
    replays with replays of the same signature).
    """

    activity_tracing: bool = False
    torch_profiler: bool = False
    counter_replay: bool = False
    replay_passes: int | None = None
    section_set: str | None = None
    pc_sampling: bool = False
    instrumentation: bool = False
    forced_wait: bool = False
    serialized: bool = False
    clock_control: str | None = None
    cache_control: str | None = None
    launch_replay: bool = False

    def signature(self) -> str:
        """A canonical, human-readable signature, e.g. ``replay(38 passes, full)+clock:none``."""
        parts: list[str] = []
        if self.counter_replay:
            parts.append(f"replay({self.replay_passes or '?'} passes, {self.section_set or '?'})")
        for flag in ("launch_replay", "instrumentation", "forced_wait", "pc_sampling", "serialized",
                     "torch_profiler", "activity_tracing"):
            if getattr(self, flag):
                parts.append(flag)
        if self.clock_control:
            parts.append(f"clock:{self.clock_control}")
        if self.cache_control:
            parts.append(f"cache:{self.cache_control}")
        return "+".join(parts) or "none"

    def timing_clean(self) -> bool:
        """True when durations from this run reflect unperturbed execution."""
        return not (self.counter_replay or self.instrumentation or self.forced_wait
                    or self.pc_sampling or self.serialized or self.torch_profiler
                    or self.launch_replay)


@dataclass(frozen=True)
class SourceRef:
    """A source line an artefact refers to: used to check ``--program`` against the artefact.

    ``text`` is the quoted source line when the artefact quotes it (ncu does), else None.
    """

    file_name: str
    line: int
    text: str | None = None


@dataclass
class Artefact:
    """What a reader knows about one artefact, and how to stream its rows."""

    path: str
    collector: str
    kind: str
    tool: str
    adapter_version: str
    batches: Callable[[], Iterator[tuple[str, pa.RecordBatch]]]
    tool_version: str | None = None
    export_schema: str | None = None
    interference: Interference = field(default_factory=Interference)
    target: str | None = None
    device: dict[str, Any] = field(default_factory=dict)
    kernels: list[str] = field(default_factory=list)
    source_refs: list[SourceRef] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    #: Where the run sat in a multi-process launch, as the artefact states it: ``rank``,
    #: ``world_size``, ``launch_group``, ``device_index`` (each may be absent).
    launch: dict[str, Any] = field(default_factory=dict)
    #: About how many rows ``batches()`` yields, where the reader's first pass counted them
    #: (an ingest progress bar's measure of the artefact); None where it did not.
    rows_hint: int | None = None


class Reader(Protocol):
    """One artefact format. ``sniff`` looks at the first bytes only; ``read`` may stream."""

    kind: str

    def sniff(self, path: Path, head: bytes) -> bool: ...

    def read(self, path: Path) -> Artefact: ...




#: Longest line a line-based artefact may have (characters): the tools write lines of at most
#: a few hundred KiB (an ncu source page row with every metric); a 4 GiB line in a 4 MB gzip
#: took 57 s to end in a MemoryError.
MAX_LINE_CHARS = 16 * 2**20
#: Most bytes a gzip artefact may inflate to, and the largest ratio of inflated to compressed
#: bytes once it has inflated :data:`RATIO_AFTER_BYTES` (the tools' traces compress 5-30x;
#: a run of one repeated byte, a "bomb", ~1000x).
MAX_INFLATED_BYTES = 64 * 2**30
MAX_INFLATE_RATIO = 200
RATIO_AFTER_BYTES = 8 * 2**20
#: Bytes of a gzip artefact inflated, and dropped, when it is opened, to apply those bounds
#: before a reader parses anything (~0.1 s).
PROBE_BYTES = 64 * 2**20


def _size(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB" if n >= 2**20 else f"{n / 2**10:,.1f} KiB"


class _Inflating(io.RawIOBase):
    """A gzip file's decompressed bytes, refused past :data:`MAX_INFLATED_BYTES` or, once
    :data:`RATIO_AFTER_BYTES` are out, past :data:`MAX_INFLATE_RATIO` times the compressed
    bytes read: a decompression bomb is refused while it is opened (well under a second), never
    held."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._raw = open(path, "rb")
        self._gz = gzip.GzipFile(fileobj=self._raw, mode="rb")
        self.out = 0
        # Inflate (and drop) the first PROBE_BYTES before a reader parses anything: a bomb
        # is refused in a fraction of a second, not after its reader has parsed megabytes.
        try:
            chunk = bytearray(2**20)
            while self.out < PROBE_BYTES and self.readinto(chunk):
                pass
            self._gz.seek(0)
        except (EOFError, OSError, zlib.error):
            self._gz.seek(0)   # a corrupt stream: its reader says where, as it reads
        except BaseException:
            self.close()
            raise
        self.out = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._gz.seek(offset, whence)   # inflates again from the start when back

    def tell(self) -> int:
        return self._gz.tell()

    def readinto(self, buf: Any) -> int:
        n = self._gz.readinto(buf)
        self.out = self._gz.tell()
        if self.out > MAX_INFLATED_BYTES or (
                self.out > RATIO_AFTER_BYTES
                and self.out > MAX_INFLATE_RATIO * max(self._raw.tell(), 1)):
            raise InputError(str(self.path), f"inflates to more than {_size(self.out)} from "
                             f"{_size(self._raw.tell())} of gzip (more than "
                             f"{MAX_INFLATE_RATIO}:1, or past {MAX_INFLATED_BYTES / 2**30:g} GiB):"
                             " not an artefact a tool wrote",
                             "ingest the tool's own output; a file this compressible is refused "
                             "before it is inflated")
        return n

    def close(self) -> None:
        with suppress(Exception):
            self._gz.close()
        self._raw.close()
        super().close()


def open_stream(path: Path) -> IO[bytes]:
    """A file's bytes for reading, decompressed (and bounded: :class:`_Inflating`) when it is
    gzip; every reader opens its artefact through this or :func:`open_text`."""
    with open(path, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    if gz:
        return io.BufferedReader(_Inflating(Path(path)), buffer_size=1 << 16)
    return open(path, "rb")


class StrictText:
    """A text file (plain or gzip) read as UTF-8: a leading BOM is skipped, an invalid byte, a
    line longer than :data:`MAX_LINE_CHARS` or a truncated gzip stream becomes an
    :class:`InputError` naming the line; a gzip file is inflated within bounds
    (:func:`open_stream`).

    Iterating yields lines, as a text file object does.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        with open(self.path, "rb") as fh:
            self.gz = fh.read(2) == b"\x1f\x8b"
        self._fh: IO[str] = io.TextIOWrapper(open_stream(self.path), encoding="utf-8-sig")

    def __enter__(self) -> StrictText:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._fh.close()

    def close(self) -> None:
        self._fh.close()

    def __iter__(self) -> Iterator[str]:
        no = 0
        try:
            for line in iter(functools.partial(self._fh.readline, MAX_LINE_CHARS + 1), ""):
                no += 1
                if len(line) > MAX_LINE_CHARS:
                    raise InputError(str(self.path), f"line {no} is longer than "
                                     f"{MAX_LINE_CHARS // 2**20} MiB characters (it was not "
                                     "read whole): not a line a tool wrote",
                                     "ingest the tool's own output; a damaged or padded file "
                                     "is refused")
                yield line
        except UnicodeDecodeError as exc:
            bad, byte = _first_bad_utf8(self.path, self.gz)
            raise InputError(str(self.path), f"is not valid UTF-8 (line {bad}: byte "
                             f"{byte!r} cannot be decoded)", "re-export the file from the tool "
                             "(argus reads UTF-8 text, with or without a byte-order mark); "
                             "a file that was edited or converted to another encoding is "
                             "refused rather than guessed") from exc
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise InputError(str(self.path), f"the gzip stream ends early or is corrupt ({exc})",
                             "the file is truncated; copy or export it again") from exc


def _first_bad_utf8(path: Path, gz: bool) -> tuple[int, bytes]:
    """1-based line and the byte of the first invalid UTF-8 sequence in a file."""
    dec = codecs.getincrementaldecoder("utf-8")()
    line = 1
    with open_stream(path) as fh:
        while chunk := fh.read(1 << 16):
            try:
                dec.decode(chunk)
            except UnicodeDecodeError as exc:
                return line + exc.object[:exc.start].count(b"\n"), exc.object[exc.start:
                                                                              exc.start + 1]
            line += chunk.count(b"\n")
    return line, b""


def open_text(path: Path) -> StrictText:
    """Open a possibly gzip-compressed UTF-8 text file (BOM skipped, invalid bytes refused)."""
    return StrictText(path)


def json_lines(path: Path, remedy: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON objects of a JSON-lines file (possibly gzip-compressed), each with its 0-based
    line index; blank lines are skipped. A line that is not a JSON record, or not an object,
    raises :class:`InputError` naming the file and the line, with ``remedy`` as its fix."""
    with open_text(path) as fh:
        for i, line in enumerate(fh):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(str(path), f"line {i + 1} is not a JSON record ({exc.msg})",
                                 f"the file is truncated or corrupt; {remedy}") from exc
            if not isinstance(rec, dict):
                raise InputError(str(path), f"line {i + 1} is not a JSON object", remedy)
            yield i, rec


def head_bytes(path: Path, n: int = 4096) -> bytes:
    """The first ``n`` bytes of a file, decompressed when it is gzip."""
    with open(path, "rb") as fh:
        raw = fh.read(n)
    if raw[:2] == b"\x1f\x8b":
        # A streaming inflate returns what it can, so a truncated .gz is still recognised
        # (its reader then reports the truncation) rather than taken for an empty file.
        try:
            raw = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw, n)
        except zlib.error:
            return b""
    return raw.removeprefix(BOM)  # a UTF-8 byte-order mark is not content: readers skip it


def evidence_batch(rows: dict[str, Any]) -> pa.RecordBatch:
    """Build an ``evidence`` batch; missing scope columns become ``'all'``, others NULL.

    Values are Python lists or Arrow arrays (used as they are, cast to the schema's type), so a
    reader that builds columns with Arrow compute does not round-trip through Python objects.
    """
    n = len(rows["signal"])
    cols = []
    everywhere = pa.repeat(pa.scalar("all", pa.string()), n)  # one array for all scope columns
    for f in EVIDENCE_SCHEMA:
        v = rows.get(f.name)
        if isinstance(v, pa.ChunkedArray):
            v = v.combine_chunks()
        if isinstance(v, pa.Array):
            cols.append(v.cast(f.type) if v.type != f.type else v)
        elif v is not None:
            cols.append(pa.array(v, type=f.type))
        elif f.name in SCOPE_COLUMNS:
            cols.append(everywhere)
        else:
            cols.append(pa.nulls(n, type=f.type))
    return pa.RecordBatch.from_arrays(cols, schema=EVIDENCE_SCHEMA)


def code_fingerprint(instructions: list[tuple[str, int, str]]) -> str:
    """sha256 (hex) of a binary's instruction shape: sorted ``(kernel, pc, opcode)``.

    The opcode is the SASS mnemonic with its modifiers (``LDGSTS.E.BYPASS.128``), without the
    predicate and operands: Nsight Compute and nvdisasm print operands in different orders and
    branch targets differently, but agree on the opcode at each PC, so the source page of a
    report and the listing of its cubin give one fingerprint. ``pc`` is relative to the
    kernel's first instruction.
    """
    h = hashlib.sha256()
    for kernel, pc, sass in sorted(instructions):
        tokens = sass.split()
        if tokens and tokens[0].startswith("@"):
            tokens = tokens[1:]
        h.update(f"{kernel}\t{pc}\t{tokens[0] if tokens else ''}\n".encode())
    return h.hexdigest()


def launch_shapes(launches: set[tuple[str, int | None, int | None, int | None]]
                  ) -> list[list[Any]]:
    """The binary's launch facts per kernel, sorted: ``[kernel, threads per block, registers
    per thread, shared bytes per block (static + dynamic)]``.

    These are fixed by the compile (Triton's num_warps, register allocation, num_stages'
    shared memory), not by the input size (the grid is left out), so two compiles of one
    kernel name that a trace cannot otherwise tell apart differ here.
    """
    return sorted([list(x) for x in launches], key=lambda x: [str(v) for v in x])


def normalize_target(value: str | None) -> str | None:
    """Normalize a GPU target: ``cuda:90``, ``sm_90a``, ``9.0`` → ``sm_90``."""
    if value is None:
        return None
    v = str(value).strip().lower()
    for prefix in ("cuda:", "sm_", "compute_"):
        if v.startswith(prefix):
            v = v[len(prefix):]
    v = v.rstrip("af")
    if "." in v:
        major, minor = v.split(".", 1)
        v = f"{major}{minor[:1]}"
    return f"sm_{v}" if v.isdigit() else None


#: Columns of the ``kernel_launch`` batches a collector yields (``run_id``, ``region_id`` are
#: filled by ingest). Trace collectors build them with :func:`kernel_launch_batch`.
KERNEL_LAUNCH_SCHEMA = shape.batch_schema("kernel_launch")


def kernel_launch_batch(rows: dict[str, list[Any]]) -> pa.RecordBatch:
    """Build a ``kernel_launch`` batch from columns; absent columns become NULL."""
    n = len(rows["kernel"])
    cols = [pa.array(rows[f.name], type=f.type) if f.name in rows else pa.nulls(n, type=f.type)
            for f in KERNEL_LAUNCH_SCHEMA]
    return pa.RecordBatch.from_arrays(cols, schema=KERNEL_LAUNCH_SCHEMA)


#: Columns of the ``collective`` batches a collector yields (``run_id`` is filled by ingest).
COLLECTIVE_SCHEMA = shape.batch_schema("collective")
#: Columns of the ``trace_span`` batches (host ops, steps, compute spans).
TRACE_SPAN_SCHEMA = shape.batch_schema("trace_span")


def table_batch(schema: pa.Schema, rows: dict[str, list[Any]]) -> pa.RecordBatch:
    """Build a batch of ``schema`` from columns; absent columns become NULL."""
    n = len(next(iter(rows.values()))) if rows else 0
    cols = [pa.array(rows[f.name], type=f.type) if f.name in rows else pa.nulls(n, type=f.type)
            for f in schema]
    return pa.RecordBatch.from_arrays(cols, schema=schema)
