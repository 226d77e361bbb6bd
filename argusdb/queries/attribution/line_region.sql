-- requires: attribution.source
-- Candidate regions of every source line a kernel's instructions can map to, per program version.
-- A line of the kernel's own file belongs to the marked region whose span holds it. A line of
-- other code inlined into the kernel (library code such as triton/language/standard.py, or a
-- @triton.jit helper) belongs to the regions of the kernel lines that call it, as the TTGIR
-- callsite(...) locations say (inline_site); when those call sites lie in several regions the
-- line is shared (n_regions > 1) and attribution splits its values. An in-kernel scope (Proton
-- instrumentation of a variant with scopes at the region markers) belongs to the region of its
-- name (source_file and source_line NULL, scope set).
CREATE OR REPLACE VIEW attribution_line_region AS
WITH own AS (
    SELECT s.program_version, s.kernel, pv.source_name AS source_file,
           unnest(range(s.start_line, s.end_line + 1)) AS source_line, s.region_id
    FROM region_span AS s JOIN program_version AS pv USING (program_version)
    WHERE s.name IS NOT NULL
),
sites AS (
    SELECT r.program_version, i.kernel, i.callee_file, i.callee_line, i.caller_file,
           i.caller_line, max(i.n_ops) AS n_ops
    FROM inline_site AS i JOIN run AS r USING (run_id)
    GROUP BY ALL
),
called AS (
    SELECT s.program_version, s.kernel, s.callee_file AS source_file,
           s.callee_line AS source_line, o.region_id,
           list(DISTINCT s.caller_line ORDER BY s.caller_line) AS caller_lines,
           sum(s.n_ops) AS weight_ops, 'callsite' AS via
    FROM sites AS s
    JOIN own AS o ON o.program_version = s.program_version AND o.kernel = s.kernel
        AND o.source_file = s.caller_file AND o.source_line = s.caller_line
    /* a line that is the kernel's own keeps its own region, whatever calls it */
    WHERE NOT EXISTS (SELECT 1 FROM own AS d WHERE d.program_version = s.program_version
                      AND d.kernel = s.kernel AND d.source_file = s.callee_file
                      AND d.source_line = s.callee_line)
    GROUP BY ALL
),
lines AS (
    SELECT program_version, kernel, source_file, source_line, NULL::VARCHAR AS scope, region_id,
           [source_line] AS caller_lines, 1::HUGEINT AS weight_ops, 'line' AS via FROM own
    UNION ALL
    SELECT program_version, kernel, source_file, source_line, NULL, region_id, caller_lines,
           weight_ops, via FROM called
    UNION ALL
    SELECT program_version, kernel, NULL, NULL, name, region_id, NULL, 1, 'scope'
    FROM region_span WHERE name IS NOT NULL
)
SELECT
    -- Program version whose spans and call sites were used.
    program_version,
    -- Kernel (function) name.
    kernel,
    -- File name of the line (the kernel's source, or inlined code such as 'standard.py').
    source_file,
    -- The line (1-based); NULL for scopes.
    source_line,
    -- In-kernel scope name (a region marker name); NULL for lines.
    scope,
    -- A candidate region of the line.
    region_id,
    -- Kernel lines in region_id that reach the line (itself, or the TTGIR call sites).
    caller_lines,
    -- TTGIR operations of the line inlined at those call sites (1 for the kernel's own lines).
    weight_ops::BIGINT AS weight_ops,
    -- 'line' (kernel's own line), 'callsite' (inlined code, through TTGIR call sites), 'scope'.
    via,
    -- Number of candidate regions of the line: 1 = one owner, > 1 = shared.
    count(*) OVER (PARTITION BY program_version, kernel, source_file, source_line, scope) AS n_regions
FROM lines;
