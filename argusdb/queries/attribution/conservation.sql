-- requires: attribution.source
-- Conservation of attributed evidence: per run, kernel and signal, the region-level attributed
-- sum (region_attribution, _unattributed included) against the observed total of the
-- attributable rows. ok is false beyond float rounding (1e-9 relative): a value was lost,
-- duplicated, or the materialization is stale.
CREATE OR REPLACE VIEW attribution_conservation AS
WITH observed AS (
    SELECT run_id, kernel, signal, sum(value) AS total, count(*) AS n
    FROM attribution_source GROUP BY ALL
),
attributed AS (
    SELECT run_id, kernel, signal, sum(value) AS total, count(DISTINCT region_id) AS n
    FROM region_attribution GROUP BY ALL
)
SELECT
    -- Run checked.
    coalesce(o.run_id, a.run_id) AS run_id,
    -- Kernel (function) name.
    coalesce(o.kernel, a.kernel) AS kernel,
    -- Signal name.
    coalesce(o.signal, a.signal) AS signal,
    -- Sum of the attributable observed values, in the signal's unit.
    o.total AS observed,
    -- Sum of the region-level attributed values, in the signal's unit.
    a.total AS attributed,
    -- attributed - observed.
    coalesce(a.total, 0) - coalesce(o.total, 0) AS difference,
    -- Number of observed source rows.
    coalesce(o.n, 0) AS n_source_rows,
    -- Number of regions credited (including _unattributed).
    coalesce(a.n, 0) AS n_regions,
    -- True when attributed equals observed up to float rounding.
    abs(coalesce(a.total, 0) - coalesce(o.total, 0)) <= 1e-9 * greatest(1.0, abs(coalesce(o.total, 0))) AS ok
FROM observed AS o
FULL OUTER JOIN attributed AS a ON a.run_id = o.run_id AND a.kernel = o.kernel
    AND a.signal = o.signal;

-- Conservation per run and kernel (what 'argus conserve' prints): how many signals were
-- checked, how many of them are conserved, and the largest difference.
CREATE OR REPLACE VIEW attribution_conservation_summary AS
SELECT
    -- Run checked.
    run_id,
    -- Kernel (function) name.
    kernel,
    -- Number of signals checked.
    count(*) AS signals,
    -- Number of those whose attributed sum equals the observed one (ok).
    count(*) FILTER (WHERE ok) AS conserved,
    -- Largest |attributed - observed| over the signals, in each signal's own unit.
    max(abs(difference)) AS max_abs_difference
FROM attribution_conservation
GROUP BY run_id, kernel;
