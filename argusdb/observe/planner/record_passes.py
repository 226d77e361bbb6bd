"""Record CUPTI profiler-host answers into the table the planner uses where CUPTI is absent.

Run where a ``libcupti`` with the profiler host API is reachable (a CUDA toolkit is enough, no
GPU needed)::

    python -m argusdb.observe.planner.record_passes [--libcupti PATH] [--lists FILE] [--out FILE]

It plans every request of :data:`REQUESTS` with a live counter that writes down each question
(metric list → passes), and stores the answers with GH100's base metrics and sub-metric
suffixes (for checking metric names and did-you-mean) in ``data/passes_gh100.json``.

Example:
    >>> TARGET, CHIP
    ('sm_90', 'GH100')
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from argusdb.observe.planner.profiler_host import CHIPS, TABLE, CtypesCounter, record_table

#: Metric mixes whose pass counts the table holds (the tests' and the README's requests).
REQUESTS: list[list[str]] = [
    ["dram__bytes_read.sum"],
    ["sm__throughput.avg.pct_of_peak_sustained_elapsed"],
    ["sm__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes_read.sum"],
    ["sm__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes_read.sum",
     "dram__bytes_write.sum"],
    ["dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sectors.sum",
     "smsp__inst_executed.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed"],
    ["gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum"],
]
#: One base metric per metric type, whose sub-metric suffixes are recorded.
SAMPLES = {"counter": "dram__bytes_read", "ratio": "smsp__average_inst_executed_per_warp",
           "throughput": "sm__throughput"}
CHIP = "GH100"
#: The target whose chip is CHIP: the requests are planned for it.
TARGET = next(t for t, c in CHIPS.items() if c == CHIP)


class _Recording:
    """A live counter that remembers every list it was asked about."""

    def __init__(self, inner: CtypesCounter) -> None:
        self.inner = inner
        self.name = inner.name
        self.asked: dict[tuple[str, ...], int | None] = {}

    def passes(self, chip: str, metrics: Sequence[str]) -> int | None:
        key = tuple(sorted(set(metrics)))
        if key not in self.asked:
            self.asked[key] = self.inner.passes(chip, key)
        return self.asked[key]


def main(argv: list[str] | None = None) -> None:
    from argusdb.observe.planner.build import plan

    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--libcupti", default="/usr/local/cuda/lib64/libcupti.so")
    ap.add_argument("--out", default=str(TABLE))
    ap.add_argument("--lists", default=None,
                    help="JSON {name: [metrics]} of further lists to record whole and metric by "
                         "metric (e.g. tools/h200/metric_lists.json, the lists the GPU side asks "
                         "cupti-python about), so the two recordings can be compared")
    args = ap.parse_args(argv)
    live = CtypesCounter(args.libcupti)
    rec = _Recording(live)
    source = Path(__file__).parents[2] / "demo" / "h200" / "sources" / "softmax.py"
    for req in REQUESTS:  # the planner's own questions: packing and split reasons
        plan(source, "softmax/softmax_fwd", req, counter=rec, plan_id="p-record",
             options={"target": TARGET})
    if args.lists:
        lists = json.loads(Path(args.lists).read_text(encoding="utf-8"))
        for name, metrics in lists.items():
            if name.startswith("_"):
                continue
            for m in metrics:
                rec.passes(CHIP, [m])
            rec.passes(CHIP, metrics)
    doc = record_table(live, CHIP, [list(k) for k, v in rec.asked.items() if v is not None],
                       SAMPLES)
    doc["produced_by"]["command"] = (f"python -m argusdb.observe.planner.record_passes --libcupti "
                                     f"{args.libcupti}"
                                     + (f" --lists {args.lists}" if args.lists else ""))
    doc["rejected"] = sorted("+".join(k) for k, v in rec.asked.items() if v is None)
    Path(args.out).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{args.out}: {len(doc['lists'])} metric lists, "
          f"{sum(len(v) for v in doc['base_metrics'].values())} base metrics")


if __name__ == "__main__":
    main()
