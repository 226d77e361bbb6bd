"""The demo: a store built from real artefacts recorded on an H200, and an answer from it.

The artefacts in ``argusdb/demo/h200/`` were recorded on an NVIDIA H200 (driver 580.159,
CUDA 13.0, Triton 3.6.0) for two Triton kernels; see ``tests/data/H200.md``.
"""

from __future__ import annotations

from pathlib import Path

from argusdb.collectors.regions import ProgramSource
from argusdb.ingest import IngestResult, ingest_path
from argusdb.store.embedded import Store

DATA = Path(__file__).parent / "h200"
#: The Triton sources the demo's H200 recordings were made from (their content is the demo's
#: program versions). The packaged kernels with the runner's harness contract are in
#: ``argusdb/demo/kernels/`` (:data:`HARNESS_DIR`).
KERNELS_DIR = DATA / "sources"
HARNESS_DIR = Path(__file__).parent / "kernels"
KERNELS = ("softmax", "matmul")
#: What the recordings cannot tell about the toolchain; enters every demo program version.
OPTIONS = {"target": "sm_90", "triton": "3.6.0", "cuda": "13.0"}

#: The demo's question: per-region launch timing of the Triton kernels, from clean runs.
QUESTION = """
SELECT region_id, count(*) AS launches, median(value) / 1000 AS median_us,
       min(value) / 1000 AS min_us, max(value) / 1000 AS max_us
FROM evidence
WHERE signal = 'duration' AND region_id IS NOT NULL
  AND run_id IN (SELECT run_id FROM run WHERE timing_clean)
GROUP BY region_id, program_version
ORDER BY region_id
""".strip()

#: The region breakdown: Nsight Compute's per-instruction counts and stall samples attributed to
#: regions (library code lands in the regions that call it), with value-weighted entropies.
REGION_BREAKDOWN = """
SELECT region_id,
       sum(value) FILTER (WHERE signal = 'inst_executed') AS inst_executed,
       round(100 * inst_executed / sum(inst_executed) OVER (PARTITION BY kernel, program_version),
             1) AS inst_pct,
       sum(value * association_entropy) FILTER (WHERE signal = 'inst_executed')
           / nullif(inst_executed, 0) AS inst_entropy_bits,
       sum(value) FILTER (WHERE signal = 'warp_stall_samples') AS stall_samples,
       sum(value * association_entropy) FILTER (WHERE signal = 'warp_stall_samples')
           / nullif(stall_samples, 0) AS stall_entropy_bits,
       arg_max(signal, value) FILTER (WHERE signal LIKE 'stall\\_%' ESCAPE '\\'
           AND signal NOT LIKE '%not\\_issued' ESCAPE '\\') AS top_stall
FROM evidence
WHERE evidence_class = 'attributed'
GROUP BY region_id, kernel, program_version
ORDER BY region_id
""".strip()

#: Artefact kinds the demo ingests, by file suffix. The ncu runs replay each kernel 38 times and
#: also report a ``duration``; the question keeps to clean-timing runs so it does not mix them in.
SUFFIXES = (".cupti.jsonl", ".source.csv", ".raw.csv", ".sass", ".ttgir")


def artefacts(kernel: str) -> list[Path]:
    """The recorded artefacts of one demo kernel that the demo ingests."""
    return sorted(p for s in SUFFIXES if (p := DATA / kernel / f"{kernel}{s}").is_file())


def foreign_runs(store: Store) -> int:
    """How many runs of ``store`` did not come from the demo's recordings.

    ``argus demo`` refuses a store holding any: the demo's versions would sit beside the user's
    own and every unfiltered question would mix them.
    """
    import hashlib
    import json

    if not store.has_table("run"):
        return 0
    shas = [hashlib.sha256(p.read_bytes()).hexdigest() for k in KERNELS for p in artefacts(k)]
    sources = [ProgramSource.from_path(KERNELS_DIR / f"{k}.py").sha256 for k in KERNELS]
    options = json.dumps({k: v for k, v in OPTIONS.items() if k != "target"}, sort_keys=True)
    # a demo trace's other kernels (torch's) are a timeline run of their own, under an unbound
    # version (no source, no options) that names the demo run it came with: the demo's too
    row = store.rows(
        "SELECT count(*) AS n FROM run r LEFT JOIN program_version p USING (program_version) "
        "WHERE NOT list_contains(?, r.artefact_sha256) OR p.parent_version IS NOT NULL "
        "   OR NOT ((list_contains(?, coalesce(p.source_sha256, '')) "
        "            AND coalesce(p.options::VARCHAR, '') = ?) "
        "        OR (r.meta->>'timeline_of' IS NOT NULL AND p.source_sha256 IS NULL))",
        [shas, sources, options])
    return int(row[0]["n"])


def build(store: Store) -> list[IngestResult]:
    """Ingest every demo artefact (idempotent: a second build writes nothing)."""
    out = []
    for k in KERNELS:
        program = ProgramSource.from_path(KERNELS_DIR / f"{k}.py")
        for p in artefacts(k):
            out.append(ingest_path(store, p, program, dict(OPTIONS)))
    return out
