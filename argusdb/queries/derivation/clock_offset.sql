-- requires: distributed.clock, shape
-- The clock alignment of each rank (clock_alignment) as derived evidence: signal
-- 'clock_offset' (ns to add to the run's timestamps to reach the reference rank's clock), with
-- its error, the instances it rests on and the method in the conditions.
-- derivation_clock_offset_of(groups): the rows of the launch groups named (VARCHAR[]; NULL: all).
CREATE OR REPLACE MACRO derivation_clock_offset_of(groups) AS TABLE
SELECT
    -- Row identity (negative: computed rows), stable for the run.
    computed_evidence_id(hash(a.run_id, 'clock_offset')) AS evidence_id,
    -- Program version of the run.
    r.program_version,
    -- Task of the run.
    r.task_id,
    -- The aligned run.
    a.run_id,
    -- The reference rank's run.
    a.ref_run_id AS parent_run_id,
    -- The run's own version (no variant: the offset is inferred, not perturbed).
    r.program_version AS variant_version,
    -- Region: '<program>/launch' (the value is per launch and rank).
    coalesce(pv.program, '?') || '/launch' AS region_id,
    -- 'clock'.
    'clock' AS kernel,
    -- Scope: 'all'.
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
    -- 'clock_offset'.
    'clock_offset' AS signal,
    -- Offset, ns (clock_alignment.offset_ns).
    a.offset_ns::DOUBLE AS value,
    -- 'ns'.
    'ns' AS unit,
    -- Conditions: error (MAD), largest residual, instances matched, method, reference.
    to_json({'method': a.method, 'error_ns': a.error_ns, 'unit': 'ns',
             'max_residual_ns': a.max_residual_ns, 'n_matched': a.n_matched, 'ref': 'lowest rank',
             'launch_group': a.launch_group, 'rank': a.rank, 'ref_rank': a.ref_rank}) AS conditions,
    -- Source rows: none (collective rows are not evidence rows), so empty.
    []::BIGINT[] AS source_evidence_ids
FROM clock_alignment AS a
JOIN run AS r ON r.run_id = a.run_id
LEFT JOIN program_version AS pv ON pv.program_version = r.program_version
WHERE groups IS NULL OR list_contains(groups, a.launch_group);

-- The clock offsets of every launch group (columns: derivation_clock_offset_of).
-- @columns: derivation_clock_offset_of
CREATE OR REPLACE VIEW derivation_clock_offset AS
SELECT * FROM derivation_clock_offset_of(NULL);
