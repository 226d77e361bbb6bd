-- requires: evidence
-- Evidence-aware constructs of the checked query language (see README "Checked queries").
-- Each is a table macro, so it is visible in the query text, parsed by the checker (which
-- knows what it accepts, see argusdb/checker/constructs.py) and recorded in explain/--json.

-- Region-keyed diff of one signal between two program versions, like for like: per region,
-- evidence class, interference signature and unit, the median of each version and their delta.
-- Only whole-kernel-scope rows (cta, sm, warp, warp_role, loop_iter all 'all') enter, so a diff
-- never compares a slice with a whole; regions or signatures present in one version only do not
-- appear. The version rule (AR01) accepts it: this is how versions are compared.
-- Example: SELECT * FROM version_diff('duration', 'ee0369be2e320607', '5c1d0a4e9b7f2d11')
-- Columns: region_id, signal, unit, evidence_class, signature, from_version, to_version,
-- from_median, to_median (in unit), delta (to - from, in unit), ratio (to / from),
-- from_rows, to_rows (rows each median rests on).
CREATE OR REPLACE MACRO version_diff(diff_signal, from_version, to_version) AS TABLE
WITH per_version AS (
    SELECT e.region_id, e.unit, e.evidence_class, coalesce(r.signature, '?') AS signature,
           e.program_version, median(e.value) AS med, count(*) AS n
    FROM evidence AS e LEFT JOIN run AS r ON r.run_id = e.run_id
    WHERE e.signal = diff_signal AND e.region_id IS NOT NULL
      AND e.program_version IN (from_version, to_version)
      AND e.cta = 'all' AND e.sm = 'all' AND e.warp = 'all' AND e.warp_role = 'all'
      AND e.loop_iter = 'all'
    GROUP BY ALL
)
SELECT f.region_id, diff_signal AS signal, f.unit, f.evidence_class, f.signature,
       from_version AS from_version, to_version AS to_version,
       f.med AS from_median, t.med AS to_median, t.med - f.med AS delta,
       t.med / nullif(f.med, 0) AS ratio, f.n AS from_rows, t.n AS to_rows
FROM per_version AS f
JOIN per_version AS t
  ON t.region_id = f.region_id AND t.unit = f.unit AND t.evidence_class = f.evidence_class
 AND t.signature = f.signature
WHERE f.program_version = from_version AND t.program_version = to_version
ORDER BY f.region_id;

-- The evidence view with an explicit acknowledgement of a combination the checker would
-- otherwise refuse: 'class_mix' (derived values combined with observed or attributed ones,
-- AR04) and/or 'cross_pass' (counters of different Nsight Compute replay passes combined as if
-- collected together, AR03). The argument is a string literal or a list of them; each row
-- carries it in the extra column `accepted`, so the acknowledgement is part of the answer.
-- Example: SELECT region_id, evidence_class, median(value)
--          FROM evidence_accepting('class_mix') GROUP BY ALL
CREATE OR REPLACE MACRO evidence_accepting(acknowledged) AS TABLE
SELECT e.*, acknowledged AS accepted FROM evidence AS e;
