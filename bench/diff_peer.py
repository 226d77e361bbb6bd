"""The peer of ``argus diff`` in the benches: the diff's question in hand-written DuckDB SQL.

Kept apart from ``bench/bench_diff.py`` so that a process timing the peer imports nothing
but DuckDB's client (``bench/bench_big.py`` runs it in a fresh process). Parameters:
``$region``, ``$a`` and ``$b`` (program version IDs).
"""

#: The diff's question in hand-written SQL: per-sample sums of both versions, medians per
#: signal, and per-run medians of every version (the noise floor's input).
PEER = """
WITH samples AS (
    SELECT e.program_version, e.signal, e.evidence_class, r.timing_clean, e.run_id, e.launch,
           sum(e.value) AS v
    FROM evidence AS e JOIN run AS r USING (run_id)
    WHERE e.region_id = $region AND e.value IS NOT NULL
    GROUP BY ALL
),
sides AS (
    SELECT program_version, signal, evidence_class, timing_clean, median(v) AS median,
           count(*) AS n
    FROM samples WHERE program_version IN ($a, $b) GROUP BY ALL
),
noise AS (
    SELECT program_version, signal, evidence_class, timing_clean,
           (max(m) - min(m)) / median(m) AS spread
    FROM (SELECT program_version, signal, evidence_class, timing_clean, run_id, median(v) AS m
          FROM samples GROUP BY ALL)
    GROUP BY ALL HAVING count(*) >= 2
)
SELECT a.signal, a.median AS from_median, b.median AS to_median, b.median / a.median AS ratio,
       (SELECT max(spread) FROM noise AS z WHERE z.signal = a.signal
           AND z.evidence_class = a.evidence_class AND z.timing_clean = a.timing_clean) AS spread
FROM sides AS a JOIN sides AS b ON a.signal = b.signal AND a.evidence_class = b.evidence_class
    AND a.timing_clean = b.timing_clean
WHERE a.program_version = $a AND b.program_version = $b
"""
