-- requires: overlap.overlap, shape
-- Exposed communication derived from a perturbed variant: the same program version run with
-- every collective forced synchronous (ARGUS_DIST_MODE=forced: the device is drained before
-- each collective and the host waits for it after), so no compute overlaps communication.
-- One value per forced run (per rank and forced launch): its steps against the steps of every
-- clean timing run of the same version, collector, rank and world size, pooled. Steps kept:
-- all but the first (cold) step of each run and those outside Tukey's fences (1.5 IQR) of
-- their run's step times; dropped steps are listed.
--   compute_only = median(forced step) - median(forced communication per step)
--   exposed_communication = median(clean steps, pooled) - compute_only
-- It holds under the conditions recorded: the forced drains add launch gaps to the forced
-- steps (compute_only is an upper bound, so the derived value is a lower bound). 'holds' is
-- false where the value falls outside [0, clean step]: the drains cost more than the
-- communication they serialize (fine-grained collectives), and the variant does not resolve
-- the exposure; read collective_exposure / step_overlap of the clean run instead.
-- One row per forced run keeps (run, launch) unique, so a diff's samples are one value each.
-- derivation_exposed_communication_step_of(versions): the steps of the forced runs of the
-- program versions named (VARCHAR[]; NULL: every version).
CREATE OR REPLACE MACRO derivation_exposed_communication_step_of(versions) AS TABLE
WITH pairs AS (
    SELECT f.run_id AS forced_run, c.run_id AS clean_run
    FROM run AS f
    JOIN run AS c ON c.program_version = f.program_version AND c.timing_clean
        AND c.collector = f.collector AND c.rank IS NOT DISTINCT FROM f.rank
        AND c.world_size IS NOT DISTINCT FROM f.world_size
    WHERE f.forced_wait AND f.collector = 'torchdist'
      AND (versions IS NULL OR list_contains(versions, f.program_version))
),
runs AS (
    SELECT DISTINCT forced_run, forced_run AS run_id, 'forced' AS side FROM pairs
    UNION ALL SELECT forced_run, clean_run, 'clean' FROM pairs
),
steps AS (
    SELECT r.forced_run, r.side, s.run_id, s.step, s.step_ns, s.comm_ns
    FROM runs AS r JOIN step_overlap AS s ON s.run_id = r.run_id
),
fences AS (
    /* per run over its steps from 1 (each run's steps enter once per forced run and side) */
    SELECT forced_run, side, run_id, quantile_cont(step_ns, 0.25) AS q1,
           quantile_cont(step_ns, 0.75) AS q3
    FROM steps WHERE step >= 1 GROUP BY ALL
)
SELECT
    -- Forced-synchronous run the value is derived for.
    s.forced_run,
    -- 'clean' or 'forced'.
    s.side,
    -- Run the step belongs to (the forced run, or one of the clean runs pooled).
    s.run_id,
    -- Step index.
    s.step,
    -- Step duration, ns.
    s.step_ns,
    -- Communication busy time in the step, ns.
    s.comm_ns,
    -- Whether the step enters the statistic.
    s.step >= 1 AND s.step_ns BETWEEN f.q1 - 1.5 * (f.q3 - f.q1) AND f.q3 + 1.5 * (f.q3 - f.q1)
        AS kept,
    -- Why a step was dropped: 'warmup' (first step) or 'outlier' (Tukey fences); NULL if kept.
    CASE WHEN s.step < 1 THEN 'warmup'
         WHEN NOT s.step_ns BETWEEN f.q1 - 1.5 * (f.q3 - f.q1) AND f.q3 + 1.5 * (f.q3 - f.q1)
         THEN 'outlier' END AS dropped
FROM steps AS s
JOIN fences AS f ON f.forced_run = s.forced_run AND f.side = s.side AND f.run_id = s.run_id;

-- The steps of every forced run (columns: derivation_exposed_communication_step_of).
-- @columns: derivation_exposed_communication_step_of
CREATE OR REPLACE VIEW derivation_exposed_communication_step AS
SELECT * FROM derivation_exposed_communication_step_of(NULL);

-- The derived rows, in derived_evidence's shape (collected by _derived_evidence_build_of), of
-- the program versions named (VARCHAR[]; NULL: every version).
CREATE OR REPLACE MACRO derivation_exposed_communication_of(versions) AS TABLE
WITH stats AS (
    SELECT forced_run,
           median(step_ns) FILTER (WHERE kept AND side = 'clean') AS clean_step_ns,
           median(step_ns) FILTER (WHERE kept AND side = 'forced') AS forced_step_ns,
           median(comm_ns) FILTER (WHERE kept AND side = 'forced') AS forced_comm_ns,
           count(*) FILTER (WHERE kept AND side = 'clean') AS n_clean,
           count(*) FILTER (WHERE kept AND side = 'forced') AS n_forced,
           list(DISTINCT run_id ORDER BY run_id) FILTER (WHERE side = 'clean') AS clean_runs,
           list({'side': side, 'run': run_id, 'step': step, 'reason': dropped}
                ORDER BY side, run_id, step) FILTER (WHERE NOT kept) AS dropped
    FROM derivation_exposed_communication_step_of(versions) GROUP BY forced_run
),
sigs AS (
    SELECT x.forced_run, string_agg(DISTINCT r.signature, '; ') AS clean_signature
    FROM derivation_exposed_communication_step_of(versions) AS x
    JOIN run AS r ON r.run_id = x.run_id
    WHERE x.side = 'clean' GROUP BY x.forced_run
)
SELECT
    -- Row identity (negative: computed rows), stable for the forced run.
    computed_evidence_id(hash(s.forced_run, 'exposed_communication')) AS evidence_id,
    -- Program version of the runs.
    f.program_version,
    -- Task of the forced run.
    f.task_id,
    -- The forced (perturbed) run.
    s.forced_run AS run_id,
    -- A clean timing run it was derived against (the first by id; all in conditions.runs).
    s.clean_runs[1] AS parent_run_id,
    -- The version the forced run measured (the same version: the transform acts at run time).
    f.program_version AS variant_version,
    -- Region: '<program>/step', the program's step (what the value is per).
    coalesce(pv.program, '?') || '/step' AS region_id,
    -- 'step'.
    'step' AS kernel,
    -- Scope: 'all' (a statistic over the kept steps).
    'all' AS launch,
    -- Scope: 'all'.
    'all' AS cta,
    -- Scope: 'all'.
    'all' AS sm,
    -- Scope: 'all'.
    'all' AS warp,
    -- Scope: 'all'.
    'all' AS warp_role,
    -- Scope: 'all'.
    'all' AS loop_iter,
    -- 'exposed_communication'.
    'exposed_communication' AS signal,
    -- median(clean steps) - (median(forced step) - median(forced communication)), ns.
    s.clean_step_ns - (s.forced_step_ns - s.forced_comm_ns) AS value,
    -- 'ns'.
    'ns' AS unit,
    -- Conditions: transform, medians, kept and dropped steps, rules.
    to_json({'transform': 'collectives forced synchronous (device drained before, host waits after)',
             'runs': {'clean': s.clean_runs, 'forced': s.forced_run, 'rank': f.rank},
             'signatures': {'clean': g.clean_signature, 'forced': f.signature},
             'statistic': 'median(clean steps, pooled over the clean runs) - (median(forced step) - median(forced comm per step))',
             'medians_ns': {'clean_step': s.clean_step_ns, 'forced_step': s.forced_step_ns, 'forced_comm': s.forced_comm_ns},
             'kept_steps': {'clean': s.n_clean, 'forced': s.n_forced},
             'dropped': coalesce(s.dropped, []), 'bound': 'lower: the forced drains lengthen forced steps',
             'holds': (s.clean_step_ns - (s.forced_step_ns - s.forced_comm_ns) BETWEEN 0 AND s.clean_step_ns),
             'rules': {'warmup_steps': 1, 'outliers': 'Tukey fences, 1.5 IQR per run'}}) AS conditions,
    -- observed_evidence rows of the steps used: none (steps come from trace_span), so empty.
    []::BIGINT[] AS source_evidence_ids
FROM stats AS s
JOIN run AS f ON f.run_id = s.forced_run
JOIN sigs AS g ON g.forced_run = s.forced_run
LEFT JOIN program_version AS pv ON pv.program_version = f.program_version
WHERE s.clean_step_ns IS NOT NULL AND s.forced_step_ns IS NOT NULL;

-- The derived rows of every version (columns: derivation_exposed_communication_of).
-- @columns: derivation_exposed_communication_of
CREATE OR REPLACE VIEW derivation_exposed_communication AS
SELECT * FROM derivation_exposed_communication_of(NULL);
