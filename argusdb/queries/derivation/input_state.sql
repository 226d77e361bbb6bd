-- requires: derivation.probe
-- The state of the inputs of derivation, per derivation group. The derived rows of a group
-- depend on its inputs alone (each run's rows are immutable once ingested), so
-- argusdb.store.materialize rebuilds a group only when its fingerprint differs from the one
-- `materialization` recorded for it, and a run no group reads rebuilds nothing:
--   exposed_latency, per probe (variant version): the probe (parent, transform, target region
--     and kernel, latest check and status) and the timing-clean runs of the variant and of its
--     parent, the only runs its pairs read;
--   exposed_communication, per program version with a forced-synchronous torchdist run: the
--     version's program and its torchdist runs that are forced or timing-clean, with the
--     timeline runs whose kernels count as theirs (interval_event's timeline_of);
--   clock_offset, per launch group: the runs of its ranks and their versions' programs.
CREATE OR REPLACE VIEW derivation_input_state AS
WITH clean AS (
    SELECT program_version, list(run_id ORDER BY run_seq) AS ids
    FROM run WHERE timing_clean GROUP BY program_version
),
latency AS (
    SELECT 'exposed_latency' AS derivation, p.variant_version AS key,
           to_json({'probe': p, 'variant_runs': v.ids, 'parent_runs': q.ids}) AS doc
    FROM derivation_probe AS p
    LEFT JOIN clean AS v ON v.program_version = p.variant_version
    LEFT JOIN clean AS q ON q.program_version = p.parent_version
),
dist AS (
    SELECT run_id, program_version FROM run
    WHERE collector = 'torchdist' AND (timing_clean OR forced_wait)
      AND program_version IN (SELECT program_version FROM run
                              WHERE forced_wait AND collector = 'torchdist')
),
communication AS (
    SELECT 'exposed_communication' AS derivation, d.program_version AS key,
           to_json({'program': any_value(pv.program),
                    'runs': list(o.run_id ORDER BY o.run_seq)}) AS doc
    FROM dist AS d
    /* a trace's timeline run counts as its program run's (interval_event) */
    JOIN run AS o ON coalesce(o.meta->>'$.timeline_of.run_id', o.run_id) = d.run_id
    LEFT JOIN program_version AS pv ON pv.program_version = d.program_version
    GROUP BY d.program_version
),
clock AS (
    SELECT 'clock_offset' AS derivation, r.launch_group AS key,
           to_json({'runs': list(r.run_id ORDER BY r.run_seq),
                    'programs': list(pv.program ORDER BY r.run_seq)}) AS doc
    FROM run AS r
    LEFT JOIN program_version AS pv ON pv.program_version = r.program_version
    WHERE r.launch_group IS NOT NULL AND r.rank IS NOT NULL
    GROUP BY r.launch_group
)
SELECT
    -- Derivation group, '<derivation>:<key>' (derivation_group_of names a derived row's).
    derivation || ':' || key AS derivation_group,
    -- Derived signal: 'exposed_latency', 'exposed_communication' or 'clock_offset'.
    derivation,
    -- The group's key: variant version, program version or launch group.
    key,
    -- md5 of the group's inputs (above), by content and run ids.
    md5(doc::VARCHAR) AS fingerprint
FROM (SELECT * FROM latency UNION ALL SELECT * FROM communication UNION ALL SELECT * FROM clock);

-- The derivation group of a derived_evidence row, as derivation_input_state names it:
-- derivation_group_of(signal, variant_version, program_version, conditions).
CREATE OR REPLACE MACRO derivation_group_of(sig, variant, version, cond) AS
    sig || ':' || CASE sig WHEN 'exposed_latency' THEN variant
                           WHEN 'exposed_communication' THEN version
                           ELSE cond->>'$.launch_group' END;
