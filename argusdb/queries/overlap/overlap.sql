-- requires: intervals.algebra
-- Compute/communication overlap, observed, per collective and per step. 'compute' is every
-- interval of role compute (kernels other than NCCL's, recorded compute spans), 'communication'
-- every interval of role communication (collectives, NCCL kernels). Read timing from runs whose
-- timing_clean is true (CUDA events, CUPTI kernel records): under host-op tracing overlap
-- changes (the checker refuses to mix such runs with clean ones).

-- Per collective instance: how much of it compute covered and how much was exposed.
CREATE OR REPLACE VIEW collective_exposure AS
SELECT
    -- Program version of the run.
    r.program_version,
    -- Launch group of the run.
    r.launch_group,
    -- Run the instance was traced in.
    x.run_id,
    -- Rank.
    x.rank,
    -- Process group name.
    c.pg,
    -- Sequence number in the group (the instance's key with launch_group and pg).
    x.ordinal AS seq,
    -- Operation.
    x.name AS op,
    -- Step the instance was issued in, or NULL.
    x.step,
    -- Message size, bytes, or NULL.
    c.bytes,
    -- Duration of the instance on this rank, ns.
    x.dur_ns,
    -- Part of it covered by compute on this rank, ns.
    x.covered_ns,
    -- Part of it no compute covered (exposed communication), ns.
    x.exposed_ns,
    -- Interference signature of the run.
    r.signature,
    -- True when the run's timing is unperturbed.
    r.timing_clean
FROM interval_exposed('collective', 'compute') AS x
JOIN run AS r ON r.run_id = x.run_id
JOIN collective AS c ON c.run_id = x.run_id AND c.seq = x.ordinal AND c.op = x.name
    AND c.start_ns = x.start_ns;

-- Per step: busy compute, busy communication, their overlap and the exposed communication,
-- from steps on the same clock as the run's collectives (a host-clock step of a profiler trace
-- does not bound device work, so such steps are left out).
CREATE OR REPLACE VIEW step_overlap AS
WITH steps AS (
    SELECT i.* FROM interval_event AS i
    WHERE i.kind = 'step' AND i.step IS NOT NULL
      AND EXISTS (SELECT 1 FROM collective AS c WHERE c.run_id = i.run_id AND c.clock = i.clock)
),
piece AS (
    SELECT 'compute' AS what, run_id, domain, start_ns, end_ns FROM interval_union('compute')
    UNION ALL SELECT 'communication', run_id, domain, start_ns, end_ns
    FROM interval_union('communication')
    UNION ALL SELECT 'overlap', run_id, domain, start_ns, end_ns
    FROM interval_intersect('communication', 'compute')
),
per AS (
    SELECT s.run_id, s.step, p.what,
           sum(least(p.end_ns, s.end_ns) - greatest(p.start_ns, s.start_ns)) AS ns
    FROM steps AS s JOIN piece AS p
      ON p.run_id = s.run_id AND p.domain = s.domain
     AND p.start_ns < s.end_ns AND s.start_ns < p.end_ns
    GROUP BY ALL
)
SELECT
    -- Program version of the run.
    r.program_version,
    -- Launch group of the run.
    r.launch_group,
    -- Run.
    s.run_id,
    -- Rank.
    s.rank,
    -- Step (0-based, the program's step ranges).
    s.step,
    -- Step duration, ns.
    s.dur_ns AS step_ns,
    -- Time in the step with any compute running, ns.
    coalesce(sum(p.ns) FILTER (WHERE p.what = 'compute'), 0) AS compute_ns,
    -- Time in the step with any communication running, ns.
    coalesce(sum(p.ns) FILTER (WHERE p.what = 'communication'), 0) AS comm_ns,
    -- Time in the step with both running, ns.
    coalesce(sum(p.ns) FILTER (WHERE p.what = 'overlap'), 0) AS overlap_ns,
    -- Communication not overlapped by compute (comm_ns - overlap_ns), ns.
    coalesce(sum(p.ns) FILTER (WHERE p.what = 'communication'), 0)
        - coalesce(sum(p.ns) FILTER (WHERE p.what = 'overlap'), 0) AS exposed_comm_ns,
    -- Interference signature of the run.
    r.signature,
    -- True when the run's timing is unperturbed.
    r.timing_clean,
    -- True when the run forced collectives synchronous (a perturbed variant).
    r.forced_wait
FROM steps AS s
JOIN run AS r ON r.run_id = s.run_id
LEFT JOIN per AS p ON p.run_id = s.run_id AND p.step = s.step
GROUP BY r.program_version, r.launch_group, s.run_id, s.rank, s.step, s.dur_ns, r.signature,
         r.timing_clean, r.forced_wait;
