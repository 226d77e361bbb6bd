-- requires: derivation.probe, derivation.exposed_communication, derivation.clock_offset, shape
-- The launches a forced-wait derivation looks at, each kept or dropped with a reason. A usable
-- probe (status 'ok') is paired, per clean timing run of the variant (or per replay of its
-- captured launch: launch_replay, paired with replays only), with the newest clean
-- timing run of the parent under the same collection (same collector, signature and device).
-- In each run the launches of the target kernel are the intervals where the probe explains the
-- target: kept, except the first `warmup` launch (cold caches, TLBs and instruction cache) and
-- launches outside Tukey's fences (1.5 IQR) of the run's other launches (perturbed by something
-- else than the probe). Launches of other kernels are dropped: those after the first target
-- launch are downstream events the forced wait perturbed, those before are 'upstream'.
-- derivation_interval_of(variants): the launches of the probes of the variant versions named
-- (VARCHAR[]; NULL: every probe).
CREATE OR REPLACE MACRO derivation_interval_of(variants) AS TABLE
WITH pairs AS (
    SELECT p.variant_version, p.parent_version, p.region_id, p.kernel, v.run_id AS variant_run,
           arg_max(q.run_id, q.run_seq) AS parent_run
    FROM derivation_probe AS p
    JOIN run AS v ON v.program_version = p.variant_version
        AND (v.timing_clean OR v.launch_replay)
    JOIN run AS q ON q.program_version = p.parent_version
        AND (q.timing_clean OR q.launch_replay) AND q.launch_replay = v.launch_replay
        AND q.collector = v.collector AND q.signature = v.signature
        AND q.device IS NOT DISTINCT FROM v.device
    WHERE p.status = 'ok' AND (variants IS NULL OR list_contains(variants, p.variant_version))
    GROUP BY ALL
),
sides AS (
    SELECT *, 'variant' AS side, variant_run AS run_id FROM pairs
    UNION ALL
    SELECT *, 'parent' AS side, parent_run AS run_id FROM pairs
),
launches AS (
    SELECT s.variant_run, s.parent_run, s.side, s.run_id, s.kernel AS target_kernel,
           e.evidence_id, e.kernel, try_cast(e.launch AS INTEGER) AS launch, e.value AS dur_ns,
           k.start_ns,
           min(k.start_ns) FILTER (WHERE e.kernel = s.kernel)
               OVER (PARTITION BY s.variant_run, s.side) AS first_target_ns
    FROM sides AS s
    JOIN observed_evidence AS e ON e.run_id = s.run_id AND e.signal = 'duration'
    LEFT JOIN kernel_launch AS k ON k.run_id = e.run_id AND k.kernel = e.kernel
        AND k.launch = try_cast(e.launch AS INTEGER)
),
fences AS (
    SELECT variant_run, side,
           quantile_cont(dur_ns, 0.25) AS q1, quantile_cont(dur_ns, 0.75) AS q3
    FROM launches WHERE kernel = target_kernel AND launch >= 1
    GROUP BY ALL
)
SELECT
    -- Variant timing run of the pair.
    l.variant_run,
    -- Parent timing run of the pair.
    l.parent_run,
    -- 'variant' or 'parent': which run the launch belongs to.
    l.side,
    -- Run the launch belongs to.
    l.run_id,
    -- observed_evidence.evidence_id of the launch's duration.
    l.evidence_id,
    -- Kernel of the launch.
    l.kernel,
    -- Launch index among launches of this kernel in the run.
    l.launch,
    -- Duration of the launch, ns.
    l.dur_ns,
    -- True when the launch enters the derivation.
    coalesce(l.kernel = l.target_kernel AND l.launch >= 1 AND l.dur_ns BETWEEN f.q1 - 1.5 * (f.q3 - f.q1) AND f.q3 + 1.5 * (f.q3 - f.q1), false) AS kept,
    -- Why a launch was dropped: 'warmup', 'outlier', 'downstream', 'upstream'; NULL when kept.
    CASE WHEN l.kernel <> l.target_kernel AND l.start_ns < l.first_target_ns THEN 'upstream' WHEN l.kernel <> l.target_kernel THEN 'downstream' WHEN l.launch < 1 THEN 'warmup' WHEN NOT (l.dur_ns BETWEEN f.q1 - 1.5 * (f.q3 - f.q1) AND f.q3 + 1.5 * (f.q3 - f.q1)) THEN 'outlier' END AS dropped
FROM launches AS l
LEFT JOIN fences AS f ON f.variant_run = l.variant_run AND f.side = l.side;

-- The launches of every probe (columns: derivation_interval_of).
-- @columns: derivation_interval_of
CREATE OR REPLACE VIEW derivation_interval AS
SELECT * FROM derivation_interval_of(NULL);

-- Rows of derived_evidence as the current inputs define them: per pair of runs, the exposed
-- latency of the probe's target region = median(kept variant launches) - median(kept parent
-- launches), with the conditions it holds under. above_noise says whether the difference
-- exceeds the parent's interquartile range (else the probe exposed no measurable latency).
-- _derived_evidence_build_of(variants, versions, groups) builds the rows of the derivation
-- groups named (derivation_input_state): exposed latency of the probes of those variant
-- versions, exposed communication of those program versions, clock offsets of those launch
-- groups (each VARCHAR[]; NULL: all of them).
CREATE OR REPLACE MACRO _derived_evidence_build_of(variants, versions, groups) AS TABLE
WITH stats AS (
    SELECT variant_run, parent_run,
           median(dur_ns) FILTER (WHERE kept AND side = 'variant') AS variant_median_ns,
           median(dur_ns) FILTER (WHERE kept AND side = 'parent') AS parent_median_ns,
           quantile_cont(dur_ns, [0.25, 0.75]) FILTER (WHERE kept AND side = 'variant') AS variant_iqr,
           quantile_cont(dur_ns, [0.25, 0.75]) FILTER (WHERE kept AND side = 'parent') AS parent_iqr,
           list(launch ORDER BY launch) FILTER (WHERE kept AND side = 'variant') AS kept_variant,
           list(launch ORDER BY launch) FILTER (WHERE kept AND side = 'parent') AS kept_parent,
           list({'side': side, 'kernel': kernel, 'launch': launch, 'reason': dropped}
                ORDER BY side, kernel, launch) FILTER (WHERE NOT kept) AS dropped,
           list(evidence_id ORDER BY evidence_id) FILTER (WHERE kept) AS source_evidence_ids
    FROM derivation_interval_of(variants) GROUP BY ALL
)
SELECT computed_evidence_id(hash(s.variant_run, s.parent_run, p.region_id, 'exposed_latency'))
           AS evidence_id,
       p.parent_version AS program_version, p.transform_task_id AS task_id,
       s.variant_run AS run_id, s.parent_run AS parent_run_id, p.variant_version, p.region_id,
       p.kernel, 'all' AS launch, 'all' AS cta, 'all' AS sm, 'all' AS warp, 'all' AS warp_role,
       'all' AS loop_iter, 'exposed_latency' AS signal,
       s.variant_median_ns - s.parent_median_ns AS value, 'ns' AS unit,
       to_json({
           'probe': p.transform, 'variant_version': p.variant_version,
           'parent_version': p.parent_version, 'target_region': p.region_id,
           'kernel': p.kernel, 'signature': r.signature, 'collector': r.collector,
           'check': {'rel_err': p.rel_err, 'tolerance': p.tolerance, 'passed': true},
           'footprint': {'status': p.footprint, 'changes': p.footprint_changes,
                         'listings': p.footprint_listings,
                         'reading': CASE p.footprint
                             WHEN 'probe_only' THEN 'the variant differs from the parent by the wait alone'
                             WHEN 'restructured' THEN 'upper bound: the variant also moves data differently (changes), and its extra time includes that work'
                             ELSE 'unverified: no SASS listing of the variant or the parent' END},
           'statistic': 'median(kept variant launches) - median(kept parent launches)',
           'variant_median_ns': s.variant_median_ns, 'parent_median_ns': s.parent_median_ns,
           'variant_iqr_ns': s.variant_iqr[2] - s.variant_iqr[1],
           'parent_iqr_ns': s.parent_iqr[2] - s.parent_iqr[1],
           'above_noise': s.variant_median_ns - s.parent_median_ns
               > s.parent_iqr[2] - s.parent_iqr[1],
           'kept': {'variant': s.kept_variant, 'parent': s.kept_parent},
           'dropped': coalesce(s.dropped, []),
           'rules': {'warmup_launches': 1, 'outliers': 'Tukey fences, 1.5 IQR per run',
                     'other_kernels': 'dropped (downstream of the probe, or upstream)'}
       }) AS conditions,
       s.source_evidence_ids
FROM stats AS s
JOIN run AS r ON r.run_id = s.variant_run
JOIN derivation_probe AS p ON p.variant_version = r.program_version
WHERE s.variant_median_ns IS NOT NULL AND s.parent_median_ns IS NOT NULL
UNION ALL
SELECT * FROM derivation_exposed_communication_of(versions)
UNION ALL
SELECT * FROM derivation_clock_offset_of(groups);

-- Every derived row the current inputs define (a build from scratch).
CREATE OR REPLACE VIEW _derived_evidence_build AS
SELECT * FROM _derived_evidence_build_of(NULL, NULL, NULL);
