-- requires: overlap.overlap
-- Per-rank summaries of a launch group, what 'argus observe ... -- torchrun' answers and the
-- per-rank report reads. Medians are over steps >= 1 (step 0 is the cold first step); runs
-- whose timing_clean is false (host-op tracing) or forced_wait is true (the perturbed variant)
-- keep their rows here with those flags, so a reader picks clean runs for step time and
-- overlap.

-- Per run (one rank of one launch): its steps, compute, communication, overlap and exposed
-- communication.
CREATE OR REPLACE VIEW rank_step AS
SELECT
    -- Program version of the run.
    s.program_version,
    -- Launch group of the run.
    s.launch_group,
    -- Run (this rank's artefact).
    s.run_id,
    -- Rank.
    s.rank,
    -- Ranks of the launch (run.world_size).
    any_value(r.world_size) AS world_size,
    -- Collector of the run (torchdist: the argusdb recorder; kineto: torch.profiler).
    any_value(r.collector) AS collector,
    -- Steps >= 1 of the run.
    count(*) FILTER (WHERE s.step >= 1) AS n_steps,
    -- Median step duration, ns.
    median(s.step_ns) FILTER (WHERE s.step >= 1) AS step_ns,
    -- Median time per step with compute running, ns.
    median(s.compute_ns) FILTER (WHERE s.step >= 1) AS compute_ns,
    -- Median time per step with communication running, ns.
    median(s.comm_ns) FILTER (WHERE s.step >= 1) AS comm_ns,
    -- Median time per step with both running, ns.
    median(s.overlap_ns) FILTER (WHERE s.step >= 1) AS overlap_ns,
    -- Median communication per step no compute covered (observed), ns.
    median(s.exposed_comm_ns) FILTER (WHERE s.step >= 1) AS exposed_comm_ns,
    -- Interference signature of the run.
    any_value(s.signature) AS signature,
    -- True when the run's timing is unperturbed.
    bool_and(s.timing_clean) AS timing_clean,
    -- True for the forced-synchronous variant.
    bool_and(s.forced_wait) AS forced_wait
FROM step_overlap AS s
JOIN run AS r ON r.run_id = s.run_id
GROUP BY s.program_version, s.launch_group, s.run_id, s.rank;

-- Per run, kind and name: how many intervals and how long (kernels, collectives, host ops,
-- steps, record_function spans), over the run's trace clock domain.
CREATE OR REPLACE VIEW rank_interval AS
SELECT
    -- Program version of the run.
    i.program_version,
    -- Launch group of the run.
    i.launch_group,
    -- Run.
    i.run_id,
    -- Rank.
    i.rank,
    -- 'kernel', 'collective', 'host_op', 'annotation', 'step', 'span'.
    i.kind,
    -- 'compute', 'communication', 'host' or 'step'.
    i.role,
    -- Kernel, operation, host op or range name.
    i.name,
    -- Intervals of that name in the run (all steps).
    count(*) AS n,
    -- Intervals in steps >= 1, or outside any step.
    count(*) FILTER (WHERE i.step IS NULL OR i.step >= 1) AS n_measured,
    -- Median duration over steps >= 1 (and intervals outside steps), ns.
    median(i.dur_ns) FILTER (WHERE i.step IS NULL OR i.step >= 1) AS median_dur_ns,
    -- Total duration, ns.
    sum(i.dur_ns) AS total_dur_ns,
    -- Interference signature of the run.
    any_value(i.signature) AS signature,
    -- True when the run's timing is unperturbed.
    bool_and(i.timing_clean) AS timing_clean
FROM interval_event AS i
WHERE i.domain = 'trace' AND i.launch_group IS NOT NULL
GROUP BY i.program_version, i.launch_group, i.run_id, i.rank, i.kind, i.role, i.name;

-- Per run of a launch group: its step summary (NULL where the run has no step ranges, e.g. a
-- CUPTI-only trace), its arrivals at collectives and its clock alignment, one row per rank
-- (what the per-rank report and dashboard show).
CREATE OR REPLACE VIEW rank_overview AS
SELECT
    -- Program version of the run.
    r.program_version,
    -- Launch group.
    r.launch_group,
    -- Run (this rank's artefact).
    r.run_id,
    -- Rank.
    r.rank,
    -- Ranks of the launch.
    r.world_size,
    -- Collector of the run.
    r.collector,
    -- Steps >= 1 of the run (0 without step ranges).
    coalesce(s.n_steps, 0) AS n_steps,
    -- Median step duration, ns (rank_step), or NULL.
    s.step_ns,
    -- Median communication per step, ns, or NULL.
    s.comm_ns,
    -- Median overlap of communication with compute per step, ns, or NULL.
    s.overlap_ns,
    -- Median exposed communication per step (observed), ns, or NULL.
    s.exposed_comm_ns,
    -- Collective instances this rank entered last (critical_rank), or NULL.
    c.n_last_to_arrive,
    -- Collective instances compared across ranks, or NULL.
    c.n_instances,
    -- Total time this rank waited for others at collectives, ns, or NULL.
    c.total_wait_ns,
    -- True for the launch group's critical rank.
    coalesce(c.is_critical, false) AS is_critical,
    -- Offset added to this rank's clock to reach the reference rank's, ns (clock_alignment).
    a.offset_ns AS clock_offset_ns,
    -- Error of that offset (median absolute deviation over matched collectives), ns.
    a.error_ns AS clock_error_ns,
    -- Interference signature of the run.
    r.signature,
    -- True when the run's timing is unperturbed.
    r.timing_clean,
    -- True for the forced-synchronous variant.
    r.forced_wait
FROM run AS r
LEFT JOIN rank_step AS s ON s.run_id = r.run_id
LEFT JOIN critical_rank AS c ON c.run_id = r.run_id
LEFT JOIN clock_alignment AS a ON a.run_id = r.run_id
WHERE r.launch_group IS NOT NULL AND r.rank IS NOT NULL
    -- a trace's kernels that are not the program's sit in a timeline run of another version
    AND EXISTS (SELECT 1 FROM interval_event AS i WHERE i.run_id = r.run_id
                AND i.kind IN ('collective', 'step', 'span'));
