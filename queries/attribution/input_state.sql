-- The state of the inputs of attribution, per program version. static_fingerprint covers what
-- every run's attribution depends on: the version's facts, its region spans and the runs that
-- gave it instruction listings or TTGIR call sites; a change rebuilds the whole version. The run
-- list covers the rest (each run's rows are immutable once ingested): a run added later is
-- attributed on its own, with the runs whose shared lines depend on the newest mapping run
-- (argusdb.materialize compares both with what `materialization` recorded).
CREATE OR REPLACE VIEW attribution_input_state AS
WITH runs AS (
    SELECT program_version, list(run_id ORDER BY run_seq) AS ids,
           list(run_seq ORDER BY run_seq) AS seqs
    FROM run GROUP BY program_version
),
mapped AS (
    SELECT r.program_version, string_agg(DISTINCT r.run_id, ',' ORDER BY r.run_id) AS ids
    FROM run AS r
    WHERE r.run_id IN (SELECT run_id FROM instruction) OR r.run_id IN (SELECT run_id FROM inline_site)
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
    -- md5 over the version's program, source, target, parent and transform, spans, and the runs with instruction listings or call sites.
    md5(concat_ws('|', pv.program, pv.source_sha256, pv.target, pv.parent_version, pv.transform, pv.transform_task_id, m.ids, s.ids)) AS static_fingerprint,
    -- Run ids of the version in run_seq order.
    coalesce(r.ids, []) AS run_ids,
    -- Their run_seq, in the same order.
    coalesce(r.seqs, []) AS run_seqs
FROM program_version AS pv
LEFT JOIN runs AS r USING (program_version)
LEFT JOIN mapped AS m USING (program_version)
LEFT JOIN spans AS s USING (program_version);
