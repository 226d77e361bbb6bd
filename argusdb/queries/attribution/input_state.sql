-- requires: attribution.source
-- The state of the inputs of attribution, per program version. static_fingerprint covers what
-- every run's attribution depends on: the version's facts, its region spans, its PC -> line map
-- (the newest listing per PC) and its TTGIR call sites, by content; a change rebuilds the whole
-- version. The run list covers the rest (each run's rows are immutable once ingested): a run
-- added later is attributed on its own (argusdb.store.materialize compares both with what
-- `materialization` recorded).
CREATE OR REPLACE VIEW attribution_input_state AS
WITH runs AS (
    SELECT program_version, list(run_id ORDER BY run_seq) AS ids,
           list(run_seq ORDER BY run_seq) AS seqs
    FROM run GROUP BY program_version
),
mapped AS (
    /* the content the runs' lines depend on, not which runs gave it: a new listing that maps
       every PC as the current ones do changes nothing (newer listings win per PC) */
    SELECT program_version, sum(hash(kernel, pc, source_file, source_line))::VARCHAR AS ids
    FROM _attribution_pc_line GROUP BY program_version
),
sited AS (
    SELECT r.program_version,
           sum(hash(i.kernel, i.callee_file, i.callee_line, i.caller_file, i.caller_line,
                    i.n_ops))::VARCHAR AS ids
    FROM (SELECT DISTINCT * FROM inline_site) AS i JOIN run AS r USING (run_id)
    GROUP BY r.program_version
),
spans AS (
    SELECT program_version,
           string_agg(region_id || ':' || start_line || '-' || end_line, ',' ORDER BY region_id)
               AS ids
    FROM region_span GROUP BY program_version
)
SELECT
    -- Program version.
    pv.program_version,
    -- md5 over the version's program, source, target, parent and transform, spans, PC -> line map and call sites (by content).
    md5(concat_ws('|', pv.program, pv.source_sha256, pv.target, pv.parent_version, pv.transform, pv.transform_task_id, m.ids, c.ids, s.ids)) AS static_fingerprint,
    -- Run ids of the version in run_seq order.
    coalesce(r.ids, []) AS run_ids,
    -- Their run_seq, in the same order.
    coalesce(r.seqs, []) AS run_seqs
FROM program_version AS pv
LEFT JOIN runs AS r USING (program_version)
LEFT JOIN mapped AS m USING (program_version)
LEFT JOIN sited AS c USING (program_version)
LEFT JOIN spans AS s USING (program_version)
/* a version without a program has no attributable rows (attribution_source) */
WHERE pv.program IS NOT NULL;
