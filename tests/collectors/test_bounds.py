"""Readers are bounded per line and per file: a huge line, a decompression bomb or a valid head
over a body of padding is refused in seconds, at a small resident set, never read whole.

Each case is generated in ``tmp_path`` and read by ``argusdb.ingest.prepare`` in a subprocess
that reports its own wall time and peak RSS (``VmHWM`` of ``/proc/self/status``: the
high-water mark of its own address space; ``ru_maxrss`` is not, since Linux carries it across
``execve`` from the forking test worker, however large that worker had grown). Before, a
4.2 MB gzip holding one 4 GiB line ended in a MemoryError after 57 s, and a 2 GB sparse
``.cupti.jsonl`` with a valid head was refused after 33-70 s at 4.33 GB.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

from tests.conftest import DEMO, ROOT

CUPTI = DEMO / "softmax" / "softmax.cupti.jsonl"
#: The numbers the readers must reach.
MAX_S, MAX_RSS = 10.0, 512 * 2**20

_READ = r'''
import json, sys, time
from argusdb.errors import ArgusError
from argusdb.ingest import prepare
t0 = time.monotonic()
try:
    prepare([sys.argv[1]])
    what = "accepted"
except ArgusError as exc:
    what = str(exc)
hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"s": time.monotonic() - t0, "what": what,
                  "rss": int(hwm.split()[1]) * 1024}))
'''


def _gzip_member(data: bytes) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


def _repeated(path: Path, head: bytes, block: bytes, times: int) -> None:
    """A multi-member gzip: ``head``, then ``block`` ``times`` over (one member compressed
    once, written ``times`` times: inflating it is the reader's work, not the test's)."""
    member = _gzip_member(block)
    with open(path, "wb") as fh:
        fh.write(_gzip_member(head))
        for _ in range(times):
            fh.write(member)


def _read(path: Path) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-c", _READ, str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out: dict[str, object] = json.loads(proc.stdout)
    print(f"\n{path.name}: {out['s']:.2f} s, {int(out['rss']) / 2**20:.0f} MiB: "  # type: ignore[call-overload]
          f"{str(out['what'])[:160]}")
    return out


def _head(n: int = 20) -> bytes:
    return b"".join(CUPTI.read_bytes().splitlines(keepends=True)[:n])


def test_a_4_gib_line_in_a_small_gzip(tmp_path: Path) -> None:
    f = tmp_path / "long.cupti.jsonl.gz"
    _repeated(f, _head() + b'{"kind": "RUNTIME", "name": "', b"x" * 2**26, 64)  # 4 GiB line
    assert f.stat().st_size < 8 * 2**20
    out = _read(f)
    assert "longer than" in str(out["what"]) or "inflates to more than" in str(out["what"])
    assert float(out["s"]) < MAX_S and int(out["rss"]) < MAX_RSS  # type: ignore[call-overload]


def test_a_10_gib_decompression_bomb(tmp_path: Path) -> None:
    f = tmp_path / "bomb.cupti.jsonl.gz"
    _repeated(f, _head(), b'{"kind": "RUNTIME"}\n' * (2**26 // 20), 160)  # 10 GiB
    out = _read(f)
    assert "inflates to more than" in str(out["what"]), out
    assert float(out["s"]) < MAX_S and int(out["rss"]) < MAX_RSS  # type: ignore[call-overload]


def test_a_valid_head_over_a_sparse_body(tmp_path: Path) -> None:
    f = tmp_path / "sparse.cupti.jsonl"
    f.write_bytes(_head())
    os.truncate(f, 2 * 10**9)   # 2 GB, all but the head a hole of NUL bytes
    out = _read(f)
    assert "line 21 is longer than" in str(out["what"]), out
    assert float(out["s"]) < MAX_S and int(out["rss"]) < MAX_RSS  # type: ignore[call-overload]


def test_an_ordinary_gzip_artefact_still_reads(tmp_path: Path) -> None:
    f = tmp_path / "a.cupti.jsonl.gz"
    f.write_bytes(_gzip_member(CUPTI.read_bytes()))
    assert _read(f)["what"] == "accepted"
    assert _read(ROOT / "tests" / "data" / "kineto" / "triton_example.json.gz")["what"] == \
        "accepted"
