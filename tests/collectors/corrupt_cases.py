"""Corrupt and implausible artefacts, generated from the real recordings in ``tests/data``.

Each :class:`Case` takes one shipped artefact, damages it the way files get damaged (cut short,
concatenated, signs flipped, strings where numbers belong, a byte-order mark, invalid UTF-8,
numbers past any clock, an injected target) and says which problem the refusal must name.
``tests/collectors/test_corrupt_artefacts.py`` ingests each through the CLI and checks the exit
code, the message (file, problem, fix) and that the store was not written.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import DATA

GPU = DATA / "gpu"
SASS = GPU / "softmax.default.sass"
SASS_OTHER = GPU / "softmax.default.fw_load.sass"  # the same kernel, another build
PTX = DATA / "triton" / "softmax.ptx"
TTGIR = DATA / "attribution" / "layernorm.ttgir"
TTIR = DATA / "triton" / "softmax.ttir"
CUPTI = GPU / "softmax.default.run1.cupti.jsonl"
SOURCE = GPU / "softmax.default.source.csv"
RAW = GPU / "softmax.default.raw.csv"
KINETO_GZ = DATA / "kineto" / "triton_example.json.gz"
KINETO_RANGES = DATA / "kineto" / "benchmark_result_924719_1679055439_trace.json.gz"
KINETO = DATA / "proton" / "torch_trace.json"
PROTON_TRACE = DATA / "proton" / "trace.chrome_trace"
PROTON_INSTR = DATA / "proton" / "instr_trace.chrome_trace"
HATCHET = DATA / "proton" / "tree.hatchet"
PCS = DATA / "proton" / "pcs.hatchet"
INSTR_TREE = DATA / "proton" / "instr_tree.hatchet"
NSYS = DATA / "nsys" / "perlmutter-cloverleaf-cuda.sqlite"
NCU_REP = DATA / "ncu" / "softmax.ncu-rep"
#: The Nsight Systems export's first kernel row, the one its cases change.
FIRST_KERNEL = "WHERE rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)"

Mutate = Callable[[bytes], bytes]


@dataclass
class Case:
    """One damaged artefact and the problem its refusal must name (a regex)."""

    id: str
    src: Path
    mutate: Mutate | None
    problem: str
    #: SQL run on a copy of an SQLite source instead of ``mutate``.
    sql: list[str] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    #: Other artefacts ingested in the same command (before this one).
    with_paths: list[Path] = field(default_factory=list)

    def write(self, tmp: Path) -> Path:
        """Write the damaged artefact under ``tmp`` (same name as the source)."""
        out = tmp / self.src.name
        if self.sql:
            shutil.copy(self.src, out)
            with sqlite3.connect(out) as con:
                for stmt in self.sql:
                    con.execute(stmt)
            con.close()
        else:
            assert self.mutate is not None
            out.write_bytes(self.mutate(self.src.read_bytes()))
        return out


# --- byte and text damage ------------------------------------------------------------------

def cut(frac: float) -> Mutate:
    """Keep the first ``frac`` of the bytes (mid-line in general)."""
    return lambda b: b[:int(len(b) * frac)]


def cut_lines(frac: float) -> Mutate:
    """Keep the first ``frac`` of the lines (a clean cut at a line end)."""
    def f(b: bytes) -> bytes:
        lines = b.splitlines(keepends=True)
        return b"".join(lines[:int(len(lines) * frac)])
    return f


def drop_lines(start_frac: float, n: int, pattern: bytes = b"") -> Mutate:
    """Remove ``n`` lines containing ``pattern`` from ``start_frac`` of the file on."""
    def f(b: bytes) -> bytes:
        lines = b.splitlines(keepends=True)
        i = int(len(lines) * start_frac)
        out, dropped = lines[:i], 0
        for ln in lines[i:]:
            if dropped < n and pattern in ln:
                dropped += 1
                continue
            out.append(ln)
        return b"".join(out)
    return f


def repeat_line(pattern: bytes) -> Mutate:
    """Write the first line containing ``pattern`` twice."""
    def f(b: bytes) -> bytes:
        lines = b.splitlines(keepends=True)
        i = next(k for k, ln in enumerate(lines) if pattern in ln)
        return b"".join([*lines[:i + 1], lines[i], *lines[i + 1:]])
    return f


def twice(b: bytes) -> bytes:
    """The file concatenated with itself."""
    return b + (b"" if b.endswith(b"\n") else b"\n") + b


def sub(pattern: str, repl: str, count: int = 1) -> Mutate:
    """Replace a regex in the text (the first ``count`` matches)."""
    def f(b: bytes) -> bytes:
        text, n = re.subn(pattern, repl, b.decode(), count=count)
        assert n, f"pattern {pattern!r} not found"
        return text.encode()
    return f


def bad_utf8(after: bytes) -> Mutate:
    """Insert an invalid UTF-8 sequence after the first occurrence of ``after``."""
    def f(b: bytes) -> bytes:
        i = b.index(after) + len(after)
        return b[:i] + b"\xc3\x28" + b[i:]
    return f


def bom(b: bytes) -> bytes:
    return b"\xef\xbb\xbf" + b


def gz(inner: Mutate) -> Mutate:
    """Damage the decompressed text of a .gz and compress it again."""
    return lambda b: gzip.compress(inner(gzip.decompress(b)), mtime=0)


def events(change: Callable[[list[dict[str, Any]]], None]) -> Mutate:
    """Change the ``traceEvents`` of a Chrome trace (``change`` edits the list in place)."""
    def f(b: bytes) -> bytes:
        doc = json.loads(b)
        change(doc["traceEvents"])
        return json.dumps(doc).encode()
    return f


def first(cat: str, **values: Any) -> Callable[[list[dict[str, Any]]], None]:
    """Set fields of the first event of category ``cat``."""
    def f(evs: list[dict[str, Any]]) -> None:
        ev = next(e for e in evs if e.get("cat") == cat and e.get("ph") == "X")
        ev.update(values)
    return f


def dup_first(cat: str) -> Callable[[list[dict[str, Any]]], None]:
    def f(evs: list[dict[str, Any]]) -> None:
        i = next(k for k, e in enumerate(evs) if e.get("cat") == cat and e.get("ph") == "X")
        evs.insert(i + 1, dict(evs[i]))
    return f


def jsonl(change: Callable[[list[dict[str, Any]]], None]) -> Mutate:
    """Change the records of a JSON-lines file (``change`` edits the list in place)."""
    def f(b: bytes) -> bytes:
        recs = [json.loads(ln) for ln in b.decode().splitlines() if ln.strip()]
        change(recs)
        return ("\n".join(json.dumps(r) for r in recs) + "\n").encode()
    return f


def first_kernel(**values: Any) -> Callable[[list[dict[str, Any]]], None]:
    def f(recs: list[dict[str, Any]]) -> None:
        rec = next(r for r in recs if r["kind"] == "CONCURRENT_KERNEL")
        rec.update({k: (v(rec) if callable(v) else v) for k, v in values.items()})
    return f


def hatchet(change: Callable[[list[Any]], None]) -> Mutate:
    def f(b: bytes) -> bytes:
        doc = json.loads(b)
        change(doc)
        return json.dumps(doc).encode()
    return f


def _kernel_node(doc: list[Any]) -> dict[str, Any]:
    """The first node below ROOT that carries a 'time (ns)' metric (or any metric)."""
    stack: list[dict[str, Any]] = list(doc[0].get("children") or [])
    while stack:
        node = stack.pop(0)
        if node.get("metrics"):
            return node
        stack.extend(node.get("children") or [])
    raise AssertionError("no node with metrics")


def metric(name: str, value: Any) -> Callable[[list[Any]], None]:
    def f(doc: list[Any]) -> None:
        node = _kernel_node(doc)
        key = name if name in node["metrics"] else next(iter(node["metrics"]))
        node["metrics"][key] = value
    return f


def dup_child(doc: list[Any]) -> None:
    root = doc[0]
    root["children"].append(json.loads(json.dumps(root["children"][0])))


def arch(value: str) -> Callable[[list[Any]], None]:
    def f(doc: list[Any]) -> None:
        for by_id in doc[1].values():
            for props in by_id.values():
                props["arch"] = value
    return f


def csv_cell(column: str, value: str, rows: int = 1, pattern: str = '"0x') -> Mutate:
    """Set ``column`` to ``value`` on the first ``rows`` data lines containing ``pattern``."""
    def f(b: bytes) -> bytes:
        lines = b.decode().splitlines(keepends=True)
        col = None
        done = 0
        for i, ln in enumerate(lines):
            cells = ln.rstrip("\r\n")[1:-1].split('","')
            if column in cells:
                col = cells.index(column)
                continue
            if col is not None and pattern in ln and done < rows and len(cells) > col:
                cells[col] = value
                lines[i] = '"' + '","'.join(cells) + '"\n'
                done += 1
        assert done, f"no row with column {column!r}"
        return "".join(lines).encode()
    return f


def raw_duplicate_result(b: bytes) -> bytes:
    lines = b.splitlines(keepends=True)
    return b"".join([*lines, lines[2]])


# --- the cases -----------------------------------------------------------------------------

CUT_SASS = "ends early|no closing ';'|has no line end"
CUT_PTX = r"ends inside|has no body|no \.version|no \.entry"
CUT_MLIR = r"ends inside|never closed|cannot resolve location|no 'module'|no tt\.func"
TARGET = "not a known CUDA target"
UTF8 = "not valid UTF-8"
DUP = "repeats .* exactly"
JSON_CUT = "ends early or is malformed|gzip stream ends early|cannot be decompressed"

CASES: list[Case] = [
    # nvdisasm SASS listings
    Case("sass-cut-50pct-bytes", SASS, cut(0.5), CUT_SASS),
    Case("sass-cut-mid-instruction", SASS, sub(r"(/\*0330\*/[^;\n]*?) ;[^\n]*\n(?s:.*)", r"\1"),
         "no closing ';'"),
    Case("sass-cut-60pct-lines", SASS, cut_lines(0.6), "ends early"),
    Case("sass-cut-before-end-label", SASS, sub(r"\.L_x_1:\n(?s:.*)", ""), "ends early"),
    Case("sass-instructions-missing", SASS, drop_lines(0.3, 5, b"/*0"), "does not follow"),
    Case("sass-instruction-repeated", SASS, repeat_line(b"/*0100*/"), "does not follow"),
    Case("sass-target-sm9999", SASS, sub("EF_CUDA_SM90", "EF_CUDA_SM9999", 2), TARGET),
    Case("sass-bad-utf8", SASS, bad_utf8(b"LDC R1"), UTF8),
    # Triton PTX, TTGIR, TTIR
    Case("ptx-cut-2pct", PTX, cut(0.02), CUT_PTX),
    Case("ptx-cut-50pct", PTX, cut(0.5), CUT_PTX),
    Case("ptx-cut-95pct", PTX, cut(0.95), CUT_PTX),
    Case("ptx-target-sm9999", PTX, sub(r"\.target\s+sm_90a?", ".target sm_9999"), TARGET),
    Case("ptx-target-injected", PTX, sub(r"\.target\s+sm_90a?", ".target '; DROP TABLE run; --"),
         TARGET),
    Case("ptx-bad-utf8", PTX, bad_utf8(b"// "), UTF8),
    Case("ttgir-cut-33pct", TTGIR, cut(0.33), CUT_MLIR),
    Case("ttgir-cut-90pct", TTGIR, cut(0.9), CUT_MLIR),
    Case("ttgir-module-unclosed", TTGIR, sub(r"\n\} loc\(#loc\)?\n", "\n"), CUT_MLIR),
    Case("ttgir-target-injected", TTGIR,
         sub('"cuda:90"', "\"cuda:'; DROP TABLE run; --\""), TARGET),
    Case("ttgir-target-sm9999", TTGIR, sub('"cuda:90"', '"cuda:9999"'), TARGET),
    Case("ttgir-bad-utf8", TTGIR, bad_utf8(b"module"), UTF8),
    Case("ttir-cut-50pct", TTIR, cut(0.5), CUT_MLIR),
    # cupti-python activity JSONL
    Case("cupti-every-record-twice", CUPTI, twice, DUP),
    Case("cupti-one-kernel-twice", CUPTI, repeat_line(b"CONCURRENT_KERNEL"), DUP),
    Case("cupti-end-1e30", CUPTI, jsonl(first_kernel(end=1e30)), r"'end' is .*outside"),
    Case("cupti-end-10e30-int", CUPTI, jsonl(first_kernel(end=10**31)), r"'end' is .*outside"),
    Case("cupti-start-string", CUPTI, jsonl(first_kernel(start=lambda r: str(r["start"]))),
         "'start' is '.*', not an integer"),
    Case("cupti-end-before-start", CUPTI, jsonl(first_kernel(end=lambda r: r["start"] - 1000)),
         "ends before it starts"),
    Case("cupti-negative-start", CUPTI,
         jsonl(first_kernel(start=lambda r: -r["start"])), r"'start' is .*outside"),
    Case("cupti-grid-string", CUPTI, jsonl(first_kernel(grid_x="16384")), "not an integer"),
    Case("cupti-registers-negative", CUPTI, jsonl(first_kernel(registers_per_thread=-23)),
         "outside"),
    Case("cupti-week-long-kernel", CUPTI,
         jsonl(first_kernel(end=lambda r: r["start"] + 10**16)), "more than 7 days"),
    Case("cupti-cut-mid-record", CUPTI, cut(0.5), "not a JSON record"),
    Case("cupti-bad-utf8", CUPTI, bad_utf8(b'"name": "'), UTF8),
    # ncu source page
    Case("source-words-in-counts", SOURCE, csv_cell("Instructions Executed", "abc", rows=60),
         "'abc' is not a number"),
    Case("source-one-word", SOURCE, csv_cell("stall_long_sb", "lots"), "not a number"),
    Case("source-negative-count", SOURCE, csv_cell("Instructions Executed", "-65536"),
         "is negative"),
    Case("source-count-1e400", SOURCE, csv_cell("Instructions Executed", "1e400"),
         "not finite"),
    Case("source-cut-mid-row", SOURCE, cut(0.5), "fields, the header has|malformed CSV"),
    Case("source-section-twice", SOURCE, twice, "lists address .* twice"),
    Case("source-bad-utf8", SOURCE, bad_utf8(b"FMNMX"), UTF8),
    Case("source-vs-other-sass", SOURCE, None, "lists 184 instructions of kernel softmax_fwd, "
         "but .* lists 192", with_paths=[SASS_OTHER]),
    # ncu raw page
    Case("raw-word-in-metric", RAW, csv_cell("gpu__time_duration.sum", "fast", pattern='"0"'),
         r"'fast' is not a number"),
    Case("raw-negative-duration", RAW, csv_cell("gpu__time_duration.sum", "-4064",
                                                pattern='"softmax_fwd"'), "negative"),
    Case("raw-result-twice", RAW, raw_duplicate_result, DUP),
    Case("raw-cc-99", RAW, csv_cell("CC", "99.9", pattern='"softmax_fwd"'), TARGET),
    Case("raw-cut-mid-row", RAW, cut(0.9), "fields, the header has|malformed CSV|ends before"),
    Case("raw-bad-utf8", RAW, bad_utf8(b'"softmax_fwd"'), UTF8),
    # Kineto (torch.profiler) traces
    Case("kineto-gz-truncated", KINETO_GZ, cut(0.6), JSON_CUT),
    Case("kineto-json-truncated", KINETO, cut(0.5), JSON_CUT),
    Case("kineto-kernel-dur-negative", KINETO, events(first("kernel", dur=-11.5)),
         "cannot be negative"),
    Case("kineto-kernel-ts-string", KINETO, events(first("kernel", ts="soon")),
         "'ts' is 'soon', not a number"),
    Case("kineto-kernel-ts-1e30", KINETO, events(first("kernel", ts=1e30)), "outside"),
    Case("kineto-kernel-dur-week", KINETO, events(first("kernel", dur=1e12)), "7 days"),
    Case("kineto-cpu-op-ts-string", KINETO, events(first("cpu_op", ts="x")), "not a number"),
    Case("kineto-grid-string", KINETO,
         events(lambda evs: next(e for e in evs if e.get("cat") == "kernel")["args"].update(
             grid=["16384", 1, 1])), "argument 'grid' is '16384'"),
    Case("kineto-registers-negative", KINETO,
         events(lambda evs: next(e for e in evs if e.get("cat") == "kernel")["args"].update(
             {"registers per thread": -23})), "argument 'registers per thread' is -23"),
    Case("kineto-kernel-twice", KINETO, events(dup_first("kernel")), DUP),
    Case("kineto-gz-kernel-twice", KINETO_GZ, gz(events(dup_first("kernel"))), DUP),
    Case("kineto-cc-99", KINETO, sub('"computeMajor": 9', '"computeMajor": 99'), TARGET),
    Case("kineto-range-counter-1e400", KINETO_RANGES,
         gz(sub(r'("smsp__sass_thread_inst_executed_op_ffma_pred_on\.sum": ?)\d+', r"\g<1>1e400")),
         "too large to be a measurement"),
    Case("kineto-bad-utf8", KINETO, bad_utf8(b'"name": "'), UTF8),
    # Proton traces and trees
    Case("proton-trace-dur-negative", PROTON_TRACE, events(first("kernel", dur=-1.0)),
         "cannot be negative|ends before"),
    Case("proton-trace-ts-string", PROTON_TRACE, events(first("kernel", ts="0")),
         "not a number"),
    Case("proton-trace-kernel-twice", PROTON_TRACE, events(dup_first("kernel")), DUP),
    Case("proton-trace-truncated", PROTON_TRACE, cut(0.5), JSON_CUT),
    Case("proton-instr-event-twice", PROTON_INSTR,
         events(lambda evs: evs.insert(1, dict(evs[0]))), DUP),
    Case("proton-instr-frequency-string", PROTON_INSTR,
         events(lambda evs: evs[0]["args"].update({"Frequency (MHz)": "fast"})),
         "'Frequency \\(MHz\\)' is 'fast', not a number"),
    Case("proton-instr-ts-huge", PROTON_INSTR,
         events(lambda evs: evs[0].update(ts=1e300)), "outside"),
    Case("proton-instr-truncated", PROTON_INSTR, cut(0.3), JSON_CUT),
    Case("hatchet-time-negative", HATCHET, hatchet(metric("time (ns)", -5)), "cannot be negative"),
    Case("hatchet-count-string", HATCHET, hatchet(metric("count", "many")),
         "'count' is 'many', not a number"),
    Case("hatchet-time-1e400", HATCHET, sub(r'"time \(ns\)": ?[0-9.]+', '"time (ns)": 1e400'),
         "not a finite number"),
    Case("hatchet-duplicate-child", HATCHET, hatchet(dup_child), "two children named"),
    Case("hatchet-truncated", HATCHET, cut(0.5), JSON_CUT),
    Case("hatchet-arch-9999", HATCHET, hatchet(arch("9999")), TARGET),
    Case("pcs-stall-negative", PCS, sub(r'"stalled_([A-Za-z_]+)": ?\d+', r'"stalled_\1": -3'),
         "cannot be negative"),
    Case("instr-tree-cycles-string", INSTR_TREE, sub(r'"cycles": ?\d+', '"cycles": "12"'),
         "'cycles' is '12', not a number"),
    # Nsight Systems SQLite export
    Case("nsys-end-before-start", NSYS, None, "ends before it starts",
         sql=[f'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start - 5 {FIRST_KERNEL}']),
    Case("nsys-start-string", NSYS, None, "not an integer",
         sql=[f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'soon' {FIRST_KERNEL}"]),
    Case("nsys-grid-string", NSYS, None, "not a non-negative integer",
         sql=[f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridX = 'big' {FIRST_KERNEL}"]),
    Case("nsys-kernel-twice", NSYS, None, "repeats another kernel row",
         sql=[f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL "
              f"{FIRST_KERNEL}"]),
    Case("nsys-truncated", NSYS, cut(0.5), "cannot be read as an SQLite database|malformed|"
         "truncated"),
    # Nsight Compute report (read through ncu where it is installed)
    Case("ncu-rep-truncated", NCU_REP, cut(0.3), "Nsight Compute|ncu"),
]

#: Artefacts that are valid although unusual: they must ingest (no false refusal).
VALID: list[Case] = [
    Case("sass-bom", SASS, bom, ""),
    # Before sm_70 scheduling words sit between instructions: PCs need only increase.
    Case("sass-pre-volta-pcs", SASS, sub("EF_CUDA_SM90", "EF_CUDA_SM61", 2), ""),
    Case("ptx-bom", PTX, bom, ""),
    Case("ttgir-bom", TTGIR, bom, ""),
    Case("cupti-bom", CUPTI, bom, ""),
    Case("source-bom", SOURCE, bom, ""),
    Case("raw-bom", RAW, bom, ""),
    Case("kineto-bom", KINETO, bom, ""),
    Case("kineto-gz-bom", KINETO_GZ, gz(bom), ""),
    Case("proton-trace-bom", PROTON_TRACE, bom, ""),
    Case("hatchet-bom", HATCHET, bom, ""),
]

#: ``--option`` values that must be refused (exit 2) before anything is read or written.
BAD_OPTIONS: list[tuple[str, str]] = [
    ("target=sm_90; DROP TABLE run; --", "not a known CUDA target"),
    ("target=cuda:'; DROP TABLE run; --", "not a known CUDA target"),
    ("target=sm_9999", "not a known CUDA target"),
    ("num_warps=four", "positive integer"),
    ("num_warps=0", "positive integer"),
    ("triton=3.6.0; rm -rf /", "not a plain token"),
    ("dtype='fp16'", "not a plain token"),
    ("bad key=1", "not an identifier"),
    ("=4", "expected KEY=VALUE"),
    ("note=two words", "not a plain token"),
]


def main() -> None:
    """Ingest every case through the CLI into a store holding one real run, and tally.

    ``python -m tests.collectors.corrupt_cases`` prints, per collector, how many cases were
    refused cleanly (exit 2, a message with file, problem and fix, store bytes unchanged),
    accepted (exit 0: stored), or crashed (any other exit: a traceback).
    """
    import hashlib
    import sys
    import tempfile
    from collections import Counter

    from click.testing import CliRunner

    from argusdb.cli import main as cli

    def digest(db: Path) -> str:
        return hashlib.sha256(db.read_bytes()).hexdigest()

    tally: Counter[tuple[str, str]] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "s.duckdb"
        CliRunner().invoke(cli, ["ingest", str(db), str(CUPTI)])
        for i, case in enumerate(CASES):
            work = Path(tmp) / str(i)
            work.mkdir()
            bad = case.src if case.mutate is None and not case.sql else case.write(work)
            before = digest(db)
            r = CliRunner().invoke(cli, ["ingest", str(db), *map(str, case.with_paths),
                                         str(bad), *case.args, "--json"])
            if r.exit_code == 0:
                outcome = "accepted"
            elif r.exit_code == 2 and digest(db) == before:
                err = json.loads(r.stdout)["errors"][0]
                outcome = "refused" if err.get("file") and err.get("fix") else "refused, vague"
            elif r.exit_code == 2:
                outcome = "refused, store bytes changed"
            else:
                outcome = "crashed"
            tally[(case.id.split("-", 1)[0], outcome)] += 1
            if outcome != "refused":
                print(f"{case.id}: {outcome}", file=sys.stderr)
    for (collector, outcome), n in sorted(tally.items()):
        print(f"{collector:8s} {outcome:30s} {n}")
    total = Counter(o for (_, o), n in tally.items() for _ in range(n))
    print(f"{len(CASES)} cases: " + ", ".join(f"{n} {o}" for o, n in sorted(total.items())))


if __name__ == "__main__":
    main()
