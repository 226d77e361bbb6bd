from __future__ import annotations

import pytest

from argusdb.collectors.regions import ProgramSource, parse_regions
from argusdb.errors import InputError
from tests.conftest import KERNELS


def spans(name: str) -> dict[str, tuple[int, int]]:
    return {r.region_id: (r.start_line, r.end_line)
            for r in parse_regions(ProgramSource.from_path(KERNELS / name))}


def test_softmax_regions_follow_markers() -> None:
    assert spans("softmax.py") == {
        "softmax/softmax_fwd": (8, 19),
        "softmax/softmax_fwd/_entry": (8, 11),
        "softmax/softmax_fwd/load": (12, 13),
        "softmax/softmax_fwd/reduce": (14, 17),
        "softmax/softmax_fwd/store": (18, 19),
    }


def test_trailing_marker_starts_region_on_its_own_line() -> None:
    s = spans("matmul.py")
    assert s["matmul/matmul_kernel/mainloop"] == (15, 18)
    assert s["matmul/matmul_kernel/epilogue"] == (19, 20)
    assert s["matmul/matmul_kernel/_entry"] == (5, 14)


def test_ids_survive_moved_lines() -> None:
    src = ProgramSource.from_path(KERNELS / "softmax.py")
    moved = ProgramSource(src.name, "\n\n\n" + src.text)
    a = {r.region_id: r.start_line for r in parse_regions(src)}
    b = {r.region_id: r.start_line for r in parse_regions(moved)}
    assert a.keys() == b.keys()
    assert all(b[k] == a[k] + 3 for k in a)


def test_duplicate_region_names_are_refused() -> None:
    src = ProgramSource("k.py", "import triton\n@triton.jit\ndef k(x):\n    # region a\n"
                        "    y = 1\n    # region a\n    z = 2\n")
    with pytest.raises(InputError, match="declared twice"):
        parse_regions(src)
