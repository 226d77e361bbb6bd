-- requires: attribution.split
-- Rows of attribution_share as the current inputs define them (argusdb.materialize inserts
-- them per stale program version). Every source row meets every candidate region of its line.
CREATE OR REPLACE VIEW _attribution_share_build AS
SELECT s.evidence_id, s.program_version, s.task_id, s.run_id, s.kernel, s.launch, s.cta, s.sm,
       s.warp, s.warp_role, s.loop_iter, s.pc, s.source_file, s.source_line, t.caller_lines,
       t.region_id, s.signal, s.value * t.share AS value, s.unit, t.share,
       t.association_entropy, t.n_candidates, t.basis, t.mapping_run_id
FROM attribution_source AS s
JOIN attribution_line_split AS t ON t.run_id = s.run_id AND t.kernel = s.kernel
    AND t.source_file IS NOT DISTINCT FROM s.source_file
    AND t.source_line IS NOT DISTINCT FROM s.source_line;

-- Rows of region_attribution as attribution_share defines them: sums per run, kernel, region,
-- scope and signal, with the value-weighted entropy of what went in and the lineage.
CREATE OR REPLACE VIEW _region_attribution_build AS
SELECT -((hash(run_id, region_id, signal, launch, cta, sm, warp, warp_role, loop_iter) >> 2)::BIGINT) - 1 AS evidence_id,
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
GROUP BY program_version, run_id, region_id, kernel, launch, cta, sm, warp, warp_role, loop_iter,
         signal;
