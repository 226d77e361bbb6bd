-- The public evidence view: every value in the store with its keys, class and lineage.
-- Observed rows come from collectors (observed_evidence); attributed and derived rows are added
-- by the attribution and derivation modules when they exist.
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
    -- Shannon entropy (bits) of the ownership split; 0 for observed values (one owner).
    0.0::DOUBLE AS association_entropy,
    -- Replay pass of a counter (Nsight Compute), else NULL.
    e.replay_pass,
    -- Path in the tool's scope tree, e.g. 'it0/k' (Proton); NULL where the artefact has none.
    e.scope_path,
    -- Lineage as JSON: the artefact and row the value was read from.
    json_object('run_id', e.run_id, 'src_row', e.src_row) AS lineage
FROM observed_evidence AS e;
