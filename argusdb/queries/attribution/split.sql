-- requires: attribution.line_region, shape
-- Rows of attribution_split as the current inputs define them, for the program versions listed
-- in `versions` and the runs with run_seq >= `from_seq` (0: every run; a table macro, so the
-- filters reach the scan of observed_evidence: evidence ids are run_seq * 2^32 + row, so a run
-- range is an evidence-id range that DuckDB's zone maps prune; argusdb.store.materialize rebuilds a
-- stale version from 0, or only its runs added since the last build). `extra_seqs` lists older
-- runs (run_seq < from_seq) that are mapping runs of the rebuilt ones and are read for their
-- counts only. How each source line of each run is split over regions: a line with one
-- candidate region goes to it whole. A shared line (n_regions > 1) is split by the execution
-- counts of its candidate regions in an independent mapping run of the same program version: a
-- run with instruction counts (inst_executed) for the kernel, the newest one before the run
-- (lower run_seq), else the first one after it; counting only instructions whose line has a
-- single owner. Adding runs to a store therefore never re-splits older runs, except runs that had
-- no such run before (their first and second counted runs arrive). Without a mapping run (or when
-- it counts nothing in any candidate) the split falls back to the TTGIR operation counts of the
-- call sites ('ttgir_n_ops'). A line with no candidate goes whole to
-- '<program>/<kernel>/_unattributed'. The split is a contribution estimate; its entropy is a
-- degree of sharing, not an error bound.
CREATE OR REPLACE MACRO _attribution_split_build(versions, from_seq, extra_seqs) AS TABLE
WITH line_totals AS MATERIALIZED (
    /* one scan of the rebuilt runs (and one of the older mapping runs): every line with its
       instruction count (the mapping runs' counts come from here too) */
    SELECT run_id, run_seq, program_version, program, kernel, source_file, source_line, scope,
           sum(value) FILTER (WHERE signal = 'inst_executed') AS executed
    FROM attribution_source
    WHERE list_contains(versions, program_version) AND run_seq >= from_seq
        AND evidence_id >= evidence_id_of(from_seq, 0)
    GROUP BY ALL
    UNION ALL
    SELECT run_id, run_seq, program_version, program, kernel, source_file, source_line, scope,
           sum(value) FILTER (WHERE signal = 'inst_executed') AS executed
    FROM attribution_source
    WHERE list_contains(versions, program_version) AND list_contains(extra_seqs, run_seq)
        AND run_seq < from_seq
        AND evidence_id >= evidence_id_of(list_min(extra_seqs), 0)
        AND evidence_id < evidence_id_of(list_max(extra_seqs) + 1, 0)
    GROUP BY ALL
),
lines AS (
    SELECT run_id, run_seq, program_version, program, kernel, source_file, source_line, scope
    FROM line_totals
    WHERE run_seq >= from_seq
),
counted AS (
    SELECT DISTINCT program_version, kernel, run_id, run_seq
    FROM line_totals WHERE executed IS NOT NULL
),
run_kernels AS (
    SELECT DISTINCT run_id, run_seq, program_version, kernel FROM lines
),
mapping AS (
    /* the newest counted run before the run, else the first one after it */
    SELECT u.run_id, u.kernel,
           coalesce(arg_max(c.run_id, c.run_seq) FILTER (WHERE c.run_seq < u.run_seq),
                    arg_min(c.run_id, c.run_seq) FILTER (WHERE c.run_seq > u.run_seq))
               AS mapping_run_id
    FROM run_kernels AS u
    LEFT JOIN counted AS c ON c.program_version = u.program_version AND c.kernel = u.kernel
        AND c.run_id <> u.run_id
    GROUP BY u.run_id, u.kernel
),
region_counts AS (
    SELECT t.run_id, t.kernel, lr.region_id, sum(t.executed) AS executed
    FROM line_totals AS t
    JOIN attribution_line_region AS lr ON lr.program_version = t.program_version
        AND lr.kernel = t.kernel AND lr.source_file = t.source_file
        AND lr.source_line = t.source_line AND lr.n_regions = 1
    WHERE t.executed IS NOT NULL
    GROUP BY ALL
),
candidates AS (
    SELECT l.*, lr.region_id AS candidate, lr.caller_lines, lr.weight_ops, lr.via,
           coalesce(lr.n_regions, 0) AS n_candidates, m.mapping_run_id,
           coalesce(rc.executed, 0) AS executed
    FROM lines AS l
    /* sentinel keys: a line matches its line, a scope its scope (hash join) */
    LEFT JOIN attribution_line_region AS lr ON lr.program_version = l.program_version
        AND lr.kernel = l.kernel AND coalesce(lr.source_file, '') = coalesce(l.source_file, '')
        AND coalesce(lr.source_line, -1) = coalesce(l.source_line, -1)
        AND coalesce(lr.scope, '') = coalesce(l.scope, '')
    LEFT JOIN mapping AS m ON m.run_id = l.run_id AND m.kernel = l.kernel
    LEFT JOIN region_counts AS rc ON rc.run_id = m.mapping_run_id AND rc.kernel = l.kernel
        AND rc.region_id = lr.region_id
),
totals AS (
    SELECT *,
           sum(executed) OVER w AS executed_total,
           sum(weight_ops) OVER w AS ops_total
    FROM candidates
    WINDOW w AS (PARTITION BY program_version, run_id, kernel, source_file, source_line, scope)
),
shares AS (
    SELECT *,
           CASE WHEN n_candidates <= 1 THEN 1.0
                WHEN executed_total > 0 THEN executed / executed_total
                ELSE weight_ops / ops_total END AS share,
           CASE WHEN n_candidates = 0 THEN 'unattributed'
                WHEN n_candidates = 1 THEN via
                WHEN executed_total > 0 THEN 'mapping_run'
                ELSE 'ttgir_n_ops' END AS basis
    FROM totals
)
SELECT
    -- Run whose rows of this line are split.
    run_id,
    -- Program version of the run.
    program_version,
    -- Kernel (function) name.
    kernel,
    -- File name of the line.
    source_file,
    -- The line (1-based); NULL when no listing knows the instruction's line, and for scopes.
    source_line,
    -- In-kernel scope name of scope rows (Proton instrumentation), else NULL.
    scope,
    -- Region credited, or '<program>/<kernel>/_unattributed' when the line has no candidate.
    coalesce(candidate, program || '/' || kernel || '/_unattributed') AS region_id,
    -- Kernel lines in region_id that reach the line (NULL for _unattributed).
    caller_lines,
    -- Fraction (0..1) of the line's values credited to region_id; sums to 1 over the line.
    share,
    -- Shannon entropy (bits) of the line's split; 0 with one owner.
    -sum(CASE WHEN share > 0 THEN share * log2(share) ELSE 0 END) OVER (PARTITION BY program_version, run_id, kernel, source_file, source_line, scope) + 0.0 AS association_entropy,
    -- Number of candidate regions of the line (0 = unattributed, 1 = one owner, > 1 = shared).
    n_candidates,
    -- 'line', 'callsite', 'scope', 'mapping_run', 'ttgir_n_ops' or 'unattributed'.
    basis,
    -- The independent run whose counts set the split (basis 'mapping_run'), else NULL.
    CASE WHEN basis = 'mapping_run' THEN mapping_run_id END AS mapping_run_id
FROM shares;
