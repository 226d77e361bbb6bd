-- The public evidence view: every value in the store with its keys, class and lineage.
-- Observed rows come from collectors (observed_evidence); attributed rows are the region-level
-- sums of region_attribution, derived rows those of derived_evidence (both materialized by
-- argusdb.store.materialize and refreshed before they are read). Instruction-level observed rows stay
-- (region_id NULL) next to their attributed sums: filter on evidence_class to avoid counting both.
CREATE OR REPLACE VIEW evidence AS
SELECT
    -- Row identity (stable): run_seq * 2^32 + artefact row for observed values.
    e.evidence_id,
    -- Program version measured (see program_version).
    e.program_version,
    -- Task that produced the value (see task).
    e.task_id,
    -- Run the value was measured in (see run).
    e.run_id,
    -- Region the value belongs to, '<program>/<kernel>[/<name>]'; NULL where not attributed.
    e.region_id,
    -- Kernel (function) name as the artefact gives it.
    e.kernel,
    -- Scope: rank of a multi-process launch the value was measured on, or 'all'; attributed and
    -- derived values take their run's rank (run.rank).
    e.rank,
    -- Scope: launch index or 'all'.
    e.launch,
    -- Scope: CTA index or 'all'.
    e.cta,
    -- Scope: SM index or 'all'.
    e.sm,
    -- Scope: warp index or 'all'.
    e.warp,
    -- Scope: warp role or 'all'.
    e.warp_role,
    -- Scope: loop iteration (range) or 'all'.
    e.loop_iter,
    -- Program counter (byte offset) of instruction-level values, else NULL.
    e.pc,
    -- Source file name of line-level values, else NULL.
    e.source_file,
    -- Source line of line-level values, else NULL.
    e.source_line,
    -- Signal name (snake_case).
    e.signal,
    -- Value in unit.
    e.value,
    -- Unit of value.
    e.unit,
    -- 'observed', 'attributed' or 'derived'.
    'observed' AS evidence_class,
    -- Shannon entropy (bits) of the ownership split: value-weighted over the shares of an
    -- attributed sum; 0 for observed and derived values (one owner). Not an error bound.
    0.0::DOUBLE AS association_entropy,
    -- Replay pass of a counter (Nsight Compute), else NULL.
    e.replay_pass,
    -- Path in the tool's scope tree, e.g. 'it0/k' (Proton); NULL where the artefact has none.
    e.scope_path,
    -- Lineage as JSON: observed: the artefact row; attributed: run, task, mapping runs and the
    -- source evidence ids; derived: variant and parent runs, source ids and the conditions.
    json_object('run_id', e.run_id, 'src_row', e.src_row) AS lineage
FROM observed_evidence AS e
UNION ALL
SELECT a.evidence_id, a.program_version, a.task_id, a.run_id, a.region_id, a.kernel,
       coalesce((SELECT r.rank::VARCHAR FROM run AS r WHERE r.run_id = a.run_id), 'all'), a.launch,
       a.cta, a.sm, a.warp, a.warp_role, a.loop_iter, NULL, NULL, NULL, a.signal, a.value, a.unit,
       'attributed', a.association_entropy, NULL, NULL,
       json_object('run_id', a.run_id, 'task_id', a.task_id, 'table', 'region_attribution',
                   'mapping_run_ids', a.mapping_run_ids, 'n_shared_rows', a.n_shared_rows,
                   'source_evidence_ids', a.source_evidence_ids)
FROM region_attribution AS a
UNION ALL
SELECT d.evidence_id, d.program_version, d.task_id, d.run_id, d.region_id, d.kernel,
       coalesce((SELECT r.rank::VARCHAR FROM run AS r WHERE r.run_id = d.run_id), 'all'), d.launch,
       d.cta, d.sm, d.warp, d.warp_role, d.loop_iter, NULL, NULL, NULL, d.signal, d.value, d.unit,
       'derived', 0.0, NULL, NULL,
       json_object('run_id', d.run_id, 'parent_run_id', d.parent_run_id, 'task_id', d.task_id,
                   'variant_version', d.variant_version, 'table', 'derived_evidence',
                   'source_evidence_ids', d.source_evidence_ids, 'conditions', d.conditions)
FROM derived_evidence AS d;
