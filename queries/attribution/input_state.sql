-- The state of the inputs of attribution, per program version: an md5 over the version's facts,
-- its runs (each run's rows are immutable once ingested) and its region spans. A changed
-- fingerprint means the version's attribution is stale (argusdb.materialize compares it with
-- the one recorded in `materialization`).
CREATE OR REPLACE VIEW attribution_input_state AS
WITH runs AS (
    SELECT program_version, string_agg(run_id, ',' ORDER BY run_seq) AS ids
    FROM run GROUP BY program_version
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
    -- md5 over the version's program, source, parent and transform, run ids and spans.
    md5(concat_ws('|', pv.program, pv.source_sha256, pv.target, pv.parent_version, pv.transform, pv.transform_task_id, r.ids, s.ids)) AS fingerprint
FROM program_version AS pv
LEFT JOIN runs AS r USING (program_version)
LEFT JOIN spans AS s USING (program_version);
