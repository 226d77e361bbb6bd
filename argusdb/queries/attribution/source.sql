-- requires: shape
-- Source line of each PC per program version and kernel, from the newest `instruction` listing
-- (Nsight Compute source page or nvdisasm -g) of that version that knows the PC: the
-- materialized map (attribution_pc_line, kept up to date by argusdb.store.materialize).
CREATE OR REPLACE VIEW _attribution_pc_line AS
SELECT program_version, kernel, pc, source_file, source_line FROM attribution_pc_line;

-- Rows of attribution_pc_line after folding in the listings of runs with run_seq > `from_seq`
-- (0: every listing), for the PCs those listings give: per PC, the newest of them that names a
-- file (a line), else the map's row as it stands (older listings). argusdb.store.materialize replaces
-- the map's rows of those PCs with these.
CREATE OR REPLACE MACRO _attribution_pc_line_fold(from_seq) AS TABLE
WITH new AS (
    SELECT r.program_version, i.kernel, i.pc,
           arg_max(i.source_file, r.run_seq) AS source_file,
           arg_max(i.source_line, r.run_seq) AS source_line,
           max(r.run_seq) AS run_seq
    FROM instruction AS i
    JOIN run AS r USING (run_id)
    WHERE r.run_seq > from_seq
    GROUP BY r.program_version, i.kernel, i.pc
)
SELECT n.program_version, n.kernel, n.pc,
       coalesce(n.source_file, o.source_file) AS source_file,
       coalesce(n.source_line, o.source_line) AS source_line,
       n.run_seq
FROM new AS n
LEFT JOIN attribution_pc_line AS o USING (program_version, kernel, pc);

-- The attributable observed rows: instruction-level (pc), line-level and in-kernel scope values
-- (scope_path below the kernel, e.g. Proton instrumentation 'softmax_fwd/load'), without a
-- region, of program-bound versions, in additive units. Non-additive units (percent, ratios, averages)
-- are not split (a share of a ratio means nothing): they stay instruction-level observed rows.
CREATE OR REPLACE VIEW attribution_source AS
SELECT
    -- observed_evidence.evidence_id of the row.
    e.evidence_id,
    -- Program version measured.
    e.program_version,
    -- Program name (source file stem) of the version.
    pv.program,
    -- Task that collected the row.
    e.task_id,
    -- Run the row was measured in.
    e.run_id,
    -- Ordinal of the run in the store (newer runs have larger run_seq).
    r.run_seq,
    -- Kernel (function) name.
    e.kernel,
    -- Scope: launch index or 'all'.
    e.launch,
    -- Scope: CTA index or 'all'.
    e.cta,
    -- Scope: SM index or 'all'.
    e.sm,
    -- Scope: warp index or 'all'.
    e.warp,
    -- Scope: warp role or 'all'.
    e.warp_role,
    -- Scope: loop iteration (range) or 'all'.
    e.loop_iter,
    -- Program counter (byte offset), NULL for line-level rows.
    e.pc,
    -- Source file name: the row's own, else (row without a line) the listing's for its pc.
    CASE WHEN e.source_line IS NULL THEN l.source_file ELSE e.source_file END AS source_file,
    -- Source line: the row's own, else the instruction listing's for its pc.
    coalesce(e.source_line, l.source_line) AS source_line,
    -- In-kernel scope of a row without pc and line: the last scope_path segment below the kernel.
    CASE WHEN e.pc IS NULL AND e.source_line IS NULL THEN regexp_extract(e.scope_path, '([^/]+)$', 1) END AS scope,
    -- Signal name.
    e.signal,
    -- Value in unit.
    e.value,
    -- Unit of value (additive units only).
    e.unit
FROM observed_evidence AS e
JOIN run AS r ON r.run_id = e.run_id
JOIN program_version AS pv ON pv.program_version = e.program_version
/* equality keys only, so DuckDB hashes the join (rows with a line ignore the match) */
LEFT JOIN _attribution_pc_line AS l
    ON l.program_version = e.program_version AND l.kernel = e.kernel AND l.pc = e.pc
WHERE e.region_id IS NULL AND e.kernel IS NOT NULL AND pv.program IS NOT NULL
    AND (e.pc IS NOT NULL OR e.source_line IS NOT NULL
         OR NOT kernel_wide_path(e.scope_path, e.kernel))
    AND e.unit IN ('count', 'samples', 'bytes', 'ns', 'cycles', 'sectors', 'requests', 'wavefronts');
