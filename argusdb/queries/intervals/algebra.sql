-- requires: intervals.event
-- Interval algebra over interval_event, per run and clock domain (never across runs: join
-- runs of a launch group on the aligned_* columns yourself, or use collective_instance). A
-- selector names a kind ('kernel', 'collective', 'host_op', 'annotation', 'step', 'span',
-- 'scope') or a role ('compute', 'communication', 'host', 'step') of interval_event.
-- Modelled on Perfetto's SPAN_JOIN and interval_intersect, on evidence runs.
-- Half-open intervals [start_ns, end_ns); touching intervals merge in a union.
-- Every macro ends its columns with the identity of the run its rows come from
-- (program_version, launch_group, rank, signature, timing_clean, as interval_event has them):
-- the checked query language reads them as keys, and refuses an aggregate or join over the
-- macros' rows that mixes program versions or clean with perturbed timing without them
-- (argusdb/checker/constructs.py declares each macro's inputs and pass-through columns).

-- Union: the disjoint intervals covered by any interval matching either selector.
-- Example: SELECT * FROM interval_merge('compute', 'compute') WHERE run_id = '...'
-- Columns: run_id, domain, start_ns, end_ns, dur_ns (ns), n_intervals (source intervals merged),
-- then the run's identity (program_version, launch_group, rank, signature, timing_clean).
CREATE OR REPLACE MACRO interval_merge(sel_a, sel_b) AS TABLE
WITH x AS (
    SELECT run_id, domain, start_ns, end_ns, program_version, launch_group, rank, signature,
           timing_clean
    FROM interval_event
    WHERE (kind IN (sel_a, sel_b) OR role IN (sel_a, sel_b)) AND end_ns > start_ns
),
o AS (
    SELECT *, max(end_ns) OVER (PARTITION BY run_id, domain ORDER BY start_ns, end_ns
                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM x
),
g AS (
    SELECT *, sum(CASE WHEN prev_end IS NULL OR start_ns > prev_end THEN 1 ELSE 0 END)
              OVER (PARTITION BY run_id, domain ORDER BY start_ns, end_ns
                    ROWS UNBOUNDED PRECEDING) AS island
    FROM o
)
SELECT run_id, domain, min(start_ns) AS start_ns, max(end_ns) AS end_ns,
       max(end_ns) - min(start_ns) AS dur_ns, count(*) AS n_intervals,
       program_version, launch_group, rank, signature, timing_clean
FROM g GROUP BY run_id, domain, island, program_version, launch_group, rank, signature,
                timing_clean;

-- Union of one selector: interval_merge(sel, sel).
-- Example: SELECT run_id, sum(dur_ns) AS busy_ns FROM interval_union('compute') GROUP BY ALL
-- Columns: as interval_merge.
CREATE OR REPLACE MACRO interval_union(sel) AS TABLE
SELECT * FROM interval_merge(sel, sel);

-- Intersection: the disjoint intervals covered by both selectors (union of A ∩ union of B).
-- Example: SELECT run_id, sum(dur_ns) AS overlap_ns
--          FROM interval_intersect('communication', 'compute') GROUP BY ALL
-- Columns: run_id, domain, start_ns, end_ns, dur_ns (ns), then the run's identity.
CREATE OR REPLACE MACRO interval_intersect(sel_a, sel_b) AS TABLE
SELECT a.run_id, a.domain, greatest(a.start_ns, b.start_ns) AS start_ns,
       least(a.end_ns, b.end_ns) AS end_ns,
       least(a.end_ns, b.end_ns) - greatest(a.start_ns, b.start_ns) AS dur_ns,
       a.program_version, a.launch_group, a.rank, a.signature, a.timing_clean
FROM interval_union(sel_a) AS a
JOIN interval_union(sel_b) AS b
  ON b.run_id = a.run_id AND b.domain = a.domain
 AND b.start_ns < a.end_ns AND a.start_ns < b.end_ns;

-- Span join: every overlapping pair of one A interval and one B interval, with the piece they
-- share and both sides' identities (Perfetto's SPAN_JOIN, inner form).
-- Example: SELECT a_name, b_name, sum(dur_ns)
--          FROM interval_span_join('collective', 'kernel') GROUP BY ALL
-- Columns: run_id, rank, domain, a_kind, a_name, a_ordinal, a_step, b_kind, b_name, b_ordinal,
-- b_step, start_ns, end_ns, dur_ns (the shared piece, ns), then the run's identity.
CREATE OR REPLACE MACRO interval_span_join(sel_a, sel_b) AS TABLE
SELECT a.run_id, a.rank, a.domain, a.kind AS a_kind, a.name AS a_name, a.ordinal AS a_ordinal,
       a.step AS a_step, b.kind AS b_kind, b.name AS b_name, b.ordinal AS b_ordinal,
       b.step AS b_step, greatest(a.start_ns, b.start_ns) AS start_ns,
       least(a.end_ns, b.end_ns) AS end_ns,
       least(a.end_ns, b.end_ns) - greatest(a.start_ns, b.start_ns) AS dur_ns,
       a.program_version, a.launch_group, a.signature, a.timing_clean
FROM interval_event AS a
JOIN interval_event AS b
  ON b.run_id = a.run_id AND b.domain = a.domain
 AND b.start_ns < a.end_ns AND a.start_ns < b.end_ns
WHERE (a.kind = sel_a OR a.role = sel_a) AND (b.kind = sel_b OR b.role = sel_b)
  AND NOT (a.kind = b.kind AND a.ordinal = b.ordinal AND a.name = b.name
           AND a.start_ns = b.start_ns);

-- Exposed part: for each A interval, how much of it no B interval covers.
-- Example: SELECT name, median(exposed_ns) FROM interval_exposed('collective', 'compute')
--          GROUP BY name
-- Columns: run_id, rank, domain, kind, name, track, ordinal, step, start_ns, end_ns, dur_ns,
-- covered_ns (covered by the union of B), exposed_ns (dur_ns - covered_ns), all ns, then the
-- run's identity (program_version, launch_group, signature, timing_clean).
CREATE OR REPLACE MACRO interval_exposed(sel_a, sel_b) AS TABLE
WITH a AS (
    SELECT run_id, rank, domain, kind, name, track, ordinal, step, start_ns, end_ns, dur_ns,
           program_version, launch_group, signature, timing_clean
    FROM interval_event WHERE (kind = sel_a OR role = sel_a)
),
cov AS (
    SELECT a.run_id, a.domain, a.kind, a.name, a.ordinal, a.start_ns, a.end_ns,
           sum(least(a.end_ns, b.end_ns) - greatest(a.start_ns, b.start_ns)) AS covered_ns
    FROM a JOIN interval_union(sel_b) AS b
      ON b.run_id = a.run_id AND b.domain = a.domain
     AND b.start_ns < a.end_ns AND a.start_ns < b.end_ns
    GROUP BY ALL
)
SELECT a.* EXCLUDE (program_version, launch_group, signature, timing_clean),
       coalesce(c.covered_ns, 0) AS covered_ns, a.dur_ns - coalesce(c.covered_ns, 0) AS exposed_ns,
       a.program_version, a.launch_group, a.signature, a.timing_clean
FROM a LEFT JOIN cov AS c
  ON c.run_id = a.run_id AND c.domain = a.domain AND c.kind = a.kind AND c.name = a.name
 AND c.ordinal IS NOT DISTINCT FROM a.ordinal AND c.start_ns = a.start_ns
 AND c.end_ns = a.end_ns;

-- Span join across ranks: every overlapping pair of an A interval of one rank and a B interval
-- of another rank of the same launch group, on the launch group's reference clock (aligned_*:
-- each rank's clock_alignment offset added, so a pair is as good as that alignment, whose
-- error clock_alignment gives). Single-process runs (no launch group) and intra-kernel scope
-- instances (no common clock) are left out.
-- Example: SELECT a_rank, b_rank, sum(dur_ns) AS ns
--          FROM interval_span_join_ranks('communication', 'compute') GROUP BY ALL
-- Columns: launch_group, domain, a_run_id, a_rank, a_kind, a_name, a_ordinal, a_step, b_run_id,
-- b_rank, b_kind, b_name, b_ordinal, b_step, start_ns, end_ns, dur_ns (the shared piece on the
-- reference clock, ns), then the launch's identity (program_version, signature, timing_clean:
-- one launch group is one program version under one recorder mode).
CREATE OR REPLACE MACRO interval_span_join_ranks(sel_a, sel_b) AS TABLE
SELECT a.launch_group, a.domain, a.run_id AS a_run_id, a.rank AS a_rank, a.kind AS a_kind,
       a.name AS a_name, a.ordinal AS a_ordinal, a.step AS a_step, b.run_id AS b_run_id,
       b.rank AS b_rank, b.kind AS b_kind, b.name AS b_name, b.ordinal AS b_ordinal,
       b.step AS b_step, greatest(a.aligned_start_ns, b.aligned_start_ns) AS start_ns,
       least(a.aligned_end_ns, b.aligned_end_ns) AS end_ns,
       least(a.aligned_end_ns, b.aligned_end_ns)
           - greatest(a.aligned_start_ns, b.aligned_start_ns) AS dur_ns,
       a.program_version, a.signature, a.timing_clean
FROM interval_event AS a
JOIN interval_event AS b
  ON b.launch_group = a.launch_group AND b.run_id <> a.run_id AND b.domain = a.domain
 AND b.aligned_start_ns < a.aligned_end_ns AND a.aligned_start_ns < b.aligned_end_ns
WHERE a.domain = 'trace' AND (a.kind = sel_a OR a.role = sel_a)
  AND (b.kind = sel_b OR b.role = sel_b);
