-- Clock alignment of the ranks of a launch group. Each rank's artefact has its own clock (CUDA
-- events count from the rank's first event; traces from the process's clock); the same
-- collective instance (group, sequence number, op) ends on every rank of its group at nearly the
-- same moment, because no rank leaves a collective before all have joined. So the offset of a
-- rank is the median, over the instances it shares with the reference rank (the lowest rank of
-- the group, same collector and artefact kind), of the difference of their end times; its error
-- is the median absolute deviation of those differences (what the end-time assumption and
-- jitter leave). Add offset_ns to a rank's timestamps to put them on the reference rank's clock.
CREATE OR REPLACE VIEW clock_alignment AS
WITH c AS (
    SELECT r.launch_group, r.rank, r.collector, r.kind, c.run_id, c.pg, c.seq, c.op, c.end_ns
    FROM collective AS c JOIN run AS r ON r.run_id = c.run_id
    WHERE r.launch_group IS NOT NULL AND r.rank IS NOT NULL
),
ref AS (
    SELECT launch_group, collector, kind, min(rank) AS ref_rank FROM c GROUP BY ALL
),
pairs AS (
    SELECT x.launch_group, x.rank, x.run_id, y.run_id AS ref_run_id, f.ref_rank,
           y.end_ns - x.end_ns AS d
    FROM c AS x
    JOIN ref AS f ON f.launch_group = x.launch_group AND f.collector = x.collector
        AND f.kind = x.kind
    JOIN c AS y ON y.launch_group = x.launch_group AND y.collector = x.collector
        AND y.kind = x.kind AND y.rank = f.ref_rank AND y.pg = x.pg AND y.seq = x.seq
        AND y.op = x.op
)
SELECT
    -- Launch group of the ranks.
    launch_group,
    -- Rank whose clock is aligned.
    rank,
    -- Run (the rank's artefact) the offset applies to.
    run_id,
    -- Reference rank (lowest rank of the launch group with the same collector and kind).
    any_value(ref_rank) AS ref_rank,
    -- Run of the reference rank.
    any_value(ref_run_id) AS ref_run_id,
    -- Offset, ns, to add to this run's timestamps to put them on the reference clock:
    -- median over matched instances of (reference end - this rank's end).
    median(d)::BIGINT AS offset_ns,
    -- Error of the offset, ns: median absolute deviation of the per-instance differences.
    mad(d)::BIGINT AS error_ns,
    -- Largest absolute residual of one instance from the offset, ns.
    max(abs(d - m))::BIGINT AS max_residual_ns,
    -- Collective instances matched between this rank and the reference.
    count(*) AS n_matched,
    -- How the offset was estimated.
    'median of matched collective end differences' AS method
FROM (SELECT *, median(d) OVER (PARTITION BY run_id) AS m FROM pairs) AS p
GROUP BY launch_group, rank, run_id;
