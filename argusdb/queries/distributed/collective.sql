-- requires: distributed.clock
-- Collective instances across the ranks of a launch group: one row per (instance, rank), on the
-- reference clock (clock_alignment), with the achieved bandwidth and how long the rank waited
-- for the last one to arrive. Bus bandwidth follows nccl-tests: algbw = bytes / duration;
-- busbw = algbw x 2(n-1)/n for allreduce, x (n-1)/n for allgather, reducescatter and alltoall,
-- x 1 for broadcast and reduce (n = group size).
CREATE OR REPLACE VIEW collective_instance AS
WITH x AS (
    SELECT r.launch_group, r.program_version, r.collector, r.kind AS artefact_kind, c.*, coalesce(a.offset_ns, 0) AS offset_ns,
           a.error_ns AS align_error_ns,
           coalesce(c.group_size, len(string_split(trim(c.pg_ranks, '[]'), ','))) AS n
    FROM collective AS c
    JOIN run AS r ON r.run_id = c.run_id
    LEFT JOIN clock_alignment AS a ON a.run_id = c.run_id
)
SELECT
    -- Launch group (NULL for a single-process run).
    launch_group,
    -- Program version measured.
    program_version,
    -- Run (the rank's artefact).
    run_id,
    -- Collector of the run (instances match across ranks within one collector and kind).
    collector,
    -- Artefact kind of the run (run.kind).
    artefact_kind,
    -- Rank.
    rank,
    -- Process group name.
    pg,
    -- Sequence number in the group: with launch_group and pg, the instance's key across ranks.
    seq,
    -- Operation (normalized).
    op,
    -- Step the instance was issued in, or NULL.
    step,
    -- Message size, bytes (nccl-tests' convention), or NULL when unknown.
    bytes,
    -- Duration on this rank, ns.
    dur_ns,
    -- Start on the reference clock, ns (start_ns + the rank's clock offset).
    start_ns + offset_ns AS aligned_start_ns,
    -- End on the reference clock, ns.
    end_ns + offset_ns AS aligned_end_ns,
    -- Error of the clock alignment, ns (clock_alignment.error_ns); NULL when not aligned.
    align_error_ns,
    -- Algorithm bandwidth, GB/s (bytes / dur_ns).
    bytes / nullif(dur_ns, 0) AS algbw_gbps,
    -- Bus bandwidth, GB/s (algbw x the op's nccl-tests factor for the group size).
    bytes / nullif(dur_ns, 0) * CASE
        WHEN op = 'allreduce' THEN 2.0 * (n - 1) / n
        WHEN op IN ('allgather', 'reducescatter', 'alltoall') THEN (n - 1) / n
        WHEN op IN ('broadcast', 'reduce') THEN 1.0 END AS busbw_gbps,
    -- Ranks of the launch group that recorded this instance.
    count(*) OVER w AS n_ranks_seen,
    -- Time this rank entered before the last rank did, ns (aligned clock): its wait for others.
    max(start_ns + offset_ns) OVER w - (start_ns + offset_ns) AS wait_ns,
    -- True for the rank that entered last (the one the others waited for).
    start_ns + offset_ns = max(start_ns + offset_ns) OVER w AS last_to_arrive
FROM x
WINDOW w AS (PARTITION BY launch_group, collector, artefact_kind, pg, seq, op);

-- The critical rank of each launch group: per rank, how often it entered a collective last
-- and how long it waited in total. The critical rank is the one the others wait for (entered
-- last most often, least own waiting).
CREATE OR REPLACE VIEW critical_rank AS
SELECT
    -- Launch group.
    launch_group,
    -- Program version.
    program_version,
    -- Collector of the runs compared (ranks are compared within one collector and kind).
    collector,
    -- Artefact kind of the runs compared.
    artefact_kind,
    -- Run (the rank's artefact).
    run_id,
    -- Rank.
    rank,
    -- Collective instances of this rank seen by more than one rank.
    count(*) AS n_instances,
    -- Instances this rank entered last.
    count(*) FILTER (WHERE last_to_arrive) AS n_last_to_arrive,
    -- Total time this rank waited for others, ns.
    sum(wait_ns) AS total_wait_ns,
    -- True for the launch group's critical rank (per collector and kind of artefact).
    rank = first_value(rank) OVER (PARTITION BY launch_group, collector, artefact_kind
        /* most last arrivals, then least waiting */ ORDER BY
        count(*) FILTER (WHERE last_to_arrive) DESC, sum(wait_ns) ASC, rank) AS is_critical
FROM collective_instance
WHERE n_ranks_seen > 1 AND launch_group IS NOT NULL
GROUP BY launch_group, program_version, collector, artefact_kind, run_id, rank;
