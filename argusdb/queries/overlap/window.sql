-- requires: intervals.event
-- Exposed communication with no step boundary: per run (one rank of one launch), over its
-- measured window (its first to its last compute or communication interval), the time some
-- communication ran, some compute ran, both ran, and communication ran with no compute
-- (HTA's per-trace exposed communication). Which intervals count is the run's basis:
-- 'kernels' where the run has kernel records (CUPTI, Kineto: NCCL kernels are the
-- communication, every other kernel compute, on any stream of the rank), else 'spans' (the
-- argusdb recorder's collective spans against its record_function compute spans; without
-- compute spans all of a collective's span counts as exposed, and an async_op collective's
-- span runs from its issue to its wait, so the value is then an upper bound). Per step:
-- step_overlap (marked steps), or argusdb.answers.exposure (steps found by repetition).

-- The disjoint busy pieces of each run: what = 'communication' (union of its communication
-- intervals), 'compute' (union of its compute intervals) or 'overlap' (their intersection).
CREATE OR REPLACE VIEW rank_busy AS
WITH basis AS (
    SELECT run_id, CASE WHEN bool_or(kind = 'kernel') THEN 'kernels' ELSE 'spans' END AS basis
    FROM interval_event
    WHERE domain = 'trace' AND launch_group IS NOT NULL
      AND role IN ('compute', 'communication')
    GROUP BY run_id
),
x AS (
    SELECT i.run_id, b.basis, i.role AS what, i.start_ns, i.end_ns
    FROM interval_event AS i JOIN basis AS b ON b.run_id = i.run_id
    WHERE i.domain = 'trace' AND i.end_ns > i.start_ns AND i.role IN ('compute', 'communication')
      AND ((b.basis = 'kernels' AND i.kind = 'kernel')
           OR (b.basis = 'spans' AND i.kind IN ('collective', 'span')))
),
o AS (
    SELECT *, max(end_ns) OVER (PARTITION BY run_id, what ORDER BY start_ns, end_ns
                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM x
),
g AS (
    SELECT *, sum(CASE WHEN prev_end IS NULL OR start_ns > prev_end THEN 1 ELSE 0 END)
              OVER (PARTITION BY run_id, what ORDER BY start_ns, end_ns
                    ROWS UNBOUNDED PRECEDING) AS island
    FROM o
),
u AS (
    SELECT run_id, basis, what, min(start_ns) AS start_ns, max(end_ns) AS end_ns,
           count(*) AS n_intervals
    FROM g GROUP BY run_id, basis, what, island
),
pieces AS (
    SELECT * FROM u
    UNION ALL
    SELECT a.run_id, a.basis, 'overlap', greatest(a.start_ns, b.start_ns),
           least(a.end_ns, b.end_ns), 0
    FROM u AS a JOIN u AS b
      ON b.run_id = a.run_id AND a.what = 'communication' AND b.what = 'compute'
     AND b.start_ns < a.end_ns AND a.start_ns < b.end_ns
)
SELECT
    -- Program version of the run.
    r.program_version,
    -- Launch group of the run.
    r.launch_group,
    -- Run (one rank's artefact).
    p.run_id,
    -- Rank.
    r.rank,
    -- 'kernels' (kernel records: NCCL kernels against the other kernels, any stream) or
    -- 'spans' (collective spans against record_function compute spans).
    p.basis,
    -- 'communication', 'compute' or 'overlap' (both at once).
    p.what,
    -- Start of the piece, ns, on the run's clock (interval_event.clock_domain).
    p.start_ns,
    -- End of the piece, ns, same clock.
    p.end_ns,
    -- Duration, ns.
    p.end_ns - p.start_ns AS dur_ns,
    -- Source intervals merged into the piece (0 for an overlap piece).
    p.n_intervals,
    -- Interference signature of the run.
    r.signature,
    -- True when the run's timing is unperturbed.
    r.timing_clean,
    -- True for the forced-synchronous variant.
    r.forced_wait
FROM pieces AS p JOIN run AS r ON r.run_id = p.run_id;

-- Per run: its measured window and the communication no compute covered over it.
CREATE OR REPLACE VIEW rank_window AS
SELECT
    -- Program version of the run.
    any_value(program_version) AS program_version,
    -- Launch group of the run.
    any_value(launch_group) AS launch_group,
    -- Run (one rank's artefact).
    run_id,
    -- Rank.
    any_value(rank) AS rank,
    -- 'kernels' or 'spans' (rank_busy.basis).
    any_value(basis) AS basis,
    -- Start of the window (first compute or communication interval), ns, run clock.
    min(start_ns) FILTER (WHERE what <> 'overlap') AS window_start_ns,
    -- Length of the window (first start to last end), ns.
    max(end_ns) FILTER (WHERE what <> 'overlap')
        - min(start_ns) FILTER (WHERE what <> 'overlap') AS window_ns,
    -- Communication intervals in the window.
    coalesce(sum(n_intervals) FILTER (WHERE what = 'communication'), 0) AS n_communication,
    -- Compute intervals in the window.
    coalesce(sum(n_intervals) FILTER (WHERE what = 'compute'), 0) AS n_compute,
    -- Time with any compute running, ns.
    coalesce(sum(dur_ns) FILTER (WHERE what = 'compute'), 0) AS compute_ns,
    -- Time with any communication running, ns.
    coalesce(sum(dur_ns) FILTER (WHERE what = 'communication'), 0) AS comm_ns,
    -- Time with both running, ns.
    coalesce(sum(dur_ns) FILTER (WHERE what = 'overlap'), 0) AS overlap_ns,
    -- Communication no compute covered (comm_ns - overlap_ns), ns.
    coalesce(sum(dur_ns) FILTER (WHERE what = 'communication'), 0)
        - coalesce(sum(dur_ns) FILTER (WHERE what = 'overlap'), 0) AS exposed_comm_ns,
    -- Interference signature of the run.
    any_value(signature) AS signature,
    -- True when the run's timing is unperturbed.
    bool_and(timing_clean) AS timing_clean,
    -- True for the forced-synchronous variant.
    bool_and(forced_wait) AS forced_wait
FROM rank_busy
GROUP BY run_id;
