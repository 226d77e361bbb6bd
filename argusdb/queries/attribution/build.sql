-- requires: attribution.split, shape
-- Per-row attribution: every attributable observed row (attribution_source) with each region
-- its line is split over (attribution_split, materialized), and the region's part of the value.
-- One row per (observed row, candidate region); the shares of a row sum to 1.
CREATE OR REPLACE VIEW attribution_share AS
SELECT
    -- The observed row the value came from (observed_evidence.evidence_id).
    s.evidence_id,
    -- Program version of the source row.
    s.program_version,
    -- Task that collected the source row.
    s.task_id,
    -- Run the source row was measured in.
    s.run_id,
    -- Kernel (function) name.
    s.kernel,
    -- Scope: launch index or 'all'.
    s.launch,
    -- Scope: CTA index or 'all'.
    s.cta,
    -- Scope: SM index or 'all'.
    s.sm,
    -- Scope: warp index or 'all'.
    s.warp,
    -- Scope: warp role or 'all'.
    s.warp_role,
    -- Scope: loop iteration (range) or 'all'.
    s.loop_iter,
    -- Program counter (byte offset); NULL for line-level source rows.
    s.pc,
    -- Source file name the instruction maps to.
    s.source_file,
    -- Source line the instruction maps to; NULL when no listing knows the PC, and for scopes.
    s.source_line,
    -- In-kernel scope name of scope rows (Proton instrumentation), else NULL.
    s.scope,
    -- Kernel lines in region_id that reach source_line (itself, or TTGIR call sites).
    t.caller_lines,
    -- Region credited ('<program>/<kernel>/<name>' or '<program>/<kernel>/_unattributed').
    t.region_id,
    -- Signal name of the source row.
    s.signal,
    -- The region's part of the source value, in unit: source value * share.
    s.value * t.share AS value,
    -- Unit of value.
    s.unit,
    -- Fraction (0..1) of the source value credited to region_id.
    t.share,
    -- Shannon entropy (bits) of the row's split; 0 with one owner.
    t.association_entropy,
    -- Number of candidate regions (0 = unattributed, 1 = one owner, > 1 = shared).
    t.n_candidates,
    -- 'line', 'callsite', 'scope', 'mapping_run', 'ttgir_n_ops' or 'unattributed'.
    t.basis,
    -- Independent run whose counts set the split ('mapping_run' basis), else NULL.
    t.mapping_run_id
FROM attribution_source AS s
/* plain equality on sentinel keys (a hash join); rows without a line match too */
JOIN attribution_split AS t ON t.run_id = s.run_id AND t.kernel = s.kernel
    AND coalesce(t.source_file, '') = coalesce(s.source_file, '')
    AND coalesce(t.source_line, -1) = coalesce(s.source_line, -1)
    AND coalesce(t.scope, '') = coalesce(s.scope, '');

-- Rows of region_attribution as the current inputs define them, for the program versions listed
-- in `versions` and their runs with run_seq >= `from_seq` (0: every run; as an evidence-id range,
-- see _attribution_split_build): attribution_share summed per run, kernel, region, scope and signal, with the
-- value-weighted entropy of what went in and the lineage (source evidence ids, mapping runs).
CREATE OR REPLACE MACRO _region_attribution_build(versions, from_seq) AS TABLE
SELECT computed_evidence_id(hash(run_id, region_id, signal, launch, cta, sm, warp, warp_role,
                                   loop_iter)) AS evidence_id,
       program_version, any_value(task_id) AS task_id, run_id, region_id, kernel, launch, cta, sm,
       warp, warp_role, loop_iter, signal, sum(value) AS value, any_value(unit) AS unit,
       CASE WHEN sum(abs(value)) > 0
            THEN sum(abs(value) * association_entropy) / sum(abs(value))
            ELSE avg(association_entropy) END AS association_entropy,
       count(*) AS n_source_rows, count(*) FILTER (WHERE n_candidates > 1) AS n_shared_rows,
       coalesce(list(DISTINCT mapping_run_id) FILTER (WHERE mapping_run_id IS NOT NULL),
                []::VARCHAR[]) AS mapping_run_ids,
       list(evidence_id ORDER BY evidence_id) AS source_evidence_ids
FROM attribution_share
WHERE list_contains(versions, program_version) AND evidence_id >= evidence_id_of(from_seq, 0)
GROUP BY program_version, run_id, region_id, kernel, launch, cta, sm, warp, warp_role, loop_iter,
         signal;
