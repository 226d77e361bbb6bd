-- Forced-wait probes: variants whose transform forces a wait after a target region's operations
-- ('forced_wait:<region name or id>'; else the region_id in the transform task's config), bound
-- to their parent, with the latest result check. status says whether the probe may be used:
-- 'ok' only when its latest check passed (the variant computes the parent's result).
CREATE OR REPLACE VIEW derivation_probe AS
WITH checks AS (
    SELECT variant_version, parent_version,
           arg_max(rel_err, checked_at) AS rel_err, arg_max(tolerance, checked_at) AS tolerance,
           arg_max(passed, checked_at) AS passed
    FROM variant_check GROUP BY ALL
),
probes AS (
    SELECT v.program_version AS variant_version, v.parent_version, v.transform,
           v.transform_task_id,
           coalesce(nullif(split_part(v.transform, ':', 2), ''),
                    json_extract_string(t.config, '$.params.region_id'),
                    json_extract_string(t.config, '$.region_id')) AS target
    FROM program_version AS v
    LEFT JOIN task AS t ON t.task_id = v.transform_task_id
    WHERE v.parent_version IS NOT NULL AND v.transform LIKE 'forced_wait%'
),
resolved AS (
    SELECT p.*, min(s.region_id) AS region_id, min(s.kernel) AS kernel
    FROM probes AS p
    LEFT JOIN region_span AS s ON s.program_version = p.parent_version AND s.name IS NOT NULL
        AND (s.region_id = p.target OR s.name = p.target)
    GROUP BY ALL
)
SELECT
    -- Variant program version (the probe).
    r.variant_version,
    -- Parent program version it is bound to.
    r.parent_version,
    -- Transform that made the variant (e.g. 'forced_wait:load').
    r.transform,
    -- Task that made the variant.
    r.transform_task_id,
    -- Target region of the probe in the parent, '<program>/<kernel>/<name>'; NULL if unknown.
    r.region_id,
    -- Kernel holding the target region.
    r.kernel,
    -- Relative error of the variant's result against the parent's (latest check).
    c.rel_err,
    -- Tolerance of that check.
    c.tolerance,
    -- 'ok', 'unchecked', 'result_differs' or 'no_target_region'.
    CASE WHEN r.region_id IS NULL THEN 'no_target_region' WHEN c.passed IS NULL THEN 'unchecked' WHEN NOT c.passed THEN 'result_differs' ELSE 'ok' END AS status
FROM resolved AS r
LEFT JOIN checks AS c ON c.variant_version = r.variant_version
    AND c.parent_version = r.parent_version;
