-- requires: distributed.clock
-- Every time interval of every run as one relation, for the interval algebra
-- (intervals.algebra): kernel launches (NCCL kernels have role 'communication'), collectives,
-- host ops, annotations, steps, recorded spans and intra-kernel scope instances. Timestamps are
-- on the run's clock; aligned_* add the rank's clock_alignment offset (0 where none).
-- Kernels of a trace's timeline run (kernels not of the program, see argus ingest) count as
-- the program run's. Intra-kernel scope instances are on their own nominal clock (domain 'scope'): the algebra
-- never combines them with the rest of the run.
CREATE OR REPLACE VIEW interval_event AS
WITH raw AS (
    /* a trace's kernels that are not the program's sit in its timeline run (run.meta
       timeline_of): on the timeline they belong to the program's run */
    SELECT coalesce(t.meta->>'$.timeline_of.run_id', k.run_id) AS run_id, 'kernel' AS kind,
           CASE WHEN k.kernel LIKE 'nccl%' THEN 'communication' ELSE 'compute' END AS role,
           k.kernel AS name, 'stream:' || k.stream_id AS track, NULL::INTEGER AS step,
           k.start_ns, k.end_ns, 'device' AS clock, k.launch::BIGINT AS ordinal
    FROM kernel_launch AS k JOIN run AS t ON t.run_id = k.run_id
    WHERE k.start_ns IS NOT NULL AND k.end_ns IS NOT NULL
    UNION ALL
    SELECT c.run_id, 'collective', 'communication', c.op, c.track, c.step, c.start_ns,
           c.end_ns, c.clock, c.seq
    FROM collective AS c
    UNION ALL
    SELECT s.run_id, s.kind, s.role, s.name, s.track, s.step, s.start_ns, s.end_ns, s.clock,
           s.src_row
    FROM trace_span AS s
    UNION ALL
    SELECT e.run_id, 'scope', 'compute', e.scope_path, 'cta:' || e.cta || '/warp:' || e.warp,
           NULL, e.start_ns, e.start_ns + e.dur_ns, 'scope', e.src_row
    FROM scope_event AS e
),
clocked AS (
    /* the kind of clock: CUDA events, a scope's nominal clock, or the tracer's timeline */
    SELECT *, CASE WHEN clock IN ('cuda_event', 'scope') THEN clock ELSE 'trace' END AS family
    FROM raw
)
SELECT
    -- Program version of the run.
    r.program_version,
    -- Launch group of the run, NULL for a single-process run.
    r.launch_group,
    -- Rank of the run, NULL for a single-process run.
    r.rank,
    -- Run the interval was traced in.
    x.run_id,
    -- 'kernel', 'collective', 'host_op', 'annotation', 'step', 'span' or 'scope'.
    x.kind,
    -- 'compute', 'communication', 'host' or 'step'.
    x.role,
    -- Name (kernel, op, annotation, scope path).
    x.name,
    -- Stream, thread, or CTA/warp of a scope instance.
    x.track,
    -- Step (0-based) the interval belongs to, where its source says; else NULL.
    x.step,
    -- Identity within kind: launch index (kernel), seq (collective), source ordinal (others).
    x.ordinal,
    -- What the timestamps measure: 'device', 'cuda_event', 'host' or 'scope'.
    x.clock,
    -- Clock domain: 'scope' for intra-kernel scope instances, else 'trace' (one per run).
    CASE WHEN x.clock = 'scope' THEN 'scope' ELSE 'trace' END AS domain,
    -- Clock the raw timestamps (start_ns, end_ns) were taken on: one process (the run, of its
    -- rank) and one clock, e.g. 'rank 1 cuda_event clock of run 3f2a...': 'trace' for the
    -- tracer's timeline of the run (Kineto and CUPTI put host and device times on it; the
    -- spans recorder's perf_counter), 'cuda_event' for CUDA events of the spans recorder,
    -- 'scope' for an intra-kernel scope's nominal clock. Raw timestamps of two clock domains
    -- are not comparable: compare aligned_* (aligned_domain) instead.
    concat(CASE WHEN r.rank IS NOT NULL THEN 'rank ' || r.rank || ' ' END,
           x.family || ' clock of run ' || x.run_id) AS clock_domain,
    -- Clock of aligned_start_ns / aligned_end_ns: the launch group's reference clock where the
    -- run has a clock_alignment offset (one per launch group and clock), else clock_domain.
    CASE WHEN x.family <> 'scope' AND a.offset_ns IS NOT NULL
         THEN concat(x.family, ' reference clock of launch group ', r.launch_group)
         ELSE concat(CASE WHEN r.rank IS NOT NULL THEN 'rank ' || r.rank || ' ' END,
                     x.family || ' clock of run ' || x.run_id) END AS aligned_domain,
    -- Start, ns, run clock.
    x.start_ns,
    -- End, ns, run clock.
    x.end_ns,
    -- Duration, ns.
    x.end_ns - x.start_ns AS dur_ns,
    -- Start on the launch group's reference clock, ns (start_ns + clock_alignment.offset_ns).
    x.start_ns + CASE WHEN x.clock = 'scope' THEN 0 ELSE coalesce(a.offset_ns, 0) END
        AS aligned_start_ns,
    -- End on the reference clock, ns.
    x.end_ns + CASE WHEN x.clock = 'scope' THEN 0 ELSE coalesce(a.offset_ns, 0) END
        AS aligned_end_ns,
    -- Interference signature of the run (run.signature).
    r.signature,
    -- True when the run's durations are unperturbed (run.timing_clean).
    r.timing_clean
FROM clocked AS x
JOIN run AS r ON r.run_id = x.run_id
LEFT JOIN clock_alignment AS a ON a.run_id = x.run_id;
