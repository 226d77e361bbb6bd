-- The opcode of a SASS instruction without predicate and modifiers: 'LDGSTS' of
-- '@!P0 LDGSTS.E.BYPASS.128 [R5], desc[UR8][R2.64], P1' (instruction.sass).
CREATE OR REPLACE MACRO sass_opcode(sass) AS
    regexp_extract(sass, '^\s*(?:@!?U?P[0-9T]+\s+)?([A-Z][A-Z0-9_]*)', 1);

-- The data-movement and synchronization opcode of an instruction, NULL for any other
-- (arithmetic, shuffles, moves, branches, constant-bank loads LDC/ULDC): global, shared and
-- local loads and stores, asynchronous and bulk (TMA) copies and their barriers, atomics,
-- barriers and fences, warpgroup MMA and its fences. They say how a region moves its data and
-- waits for it; a forced wait adds only shuffles (argusdb/observe/transforms/forced_wait.py), so a
-- change among them is the transform's doing.
CREATE OR REPLACE MACRO sass_movement_opcode(sass) AS
    CASE WHEN sass_opcode(sass) IN ('LDG', 'LDS', 'LDL', 'LDSM', 'LDGSTS', 'LDGDEPBAR', 'DEPBAR', 'STG', 'STS', 'STL', 'STSM', 'ATOM', 'ATOMG', 'ATOMS', 'RED', 'CCTL', 'UTMALDG', 'UTMASTG', 'UTMAPF', 'UTMAREDG', 'UTMACCTL', 'UBLKCP', 'UBLKRED', 'UBLKPF', 'BAR', 'MEMBAR', 'FENCE', 'ERRBAR', 'SYNCS', 'ARRIVES', 'WARPGROUP', 'HGMMA', 'HMMA') THEN sass_opcode(sass) END;

-- Forced-wait probes: variants whose transform forces a wait after a target region's operations
-- ('forced_wait:<region name or id>'; else the region_id in the transform task's config), bound
-- to their parent, with the latest result check and the probe's footprint in machine code.
-- status says whether the probe may be used: 'ok' only when its latest check passed (the
-- variant computes the parent's result). footprint says whether the variant's machine code
-- differs from the parent's only by the wait: the data-movement and synchronization
-- instructions (sass_movement_opcode) of the kernel, counted in the first SASS listing of
-- each version (`instruction`: an Nsight Compute source page, or `nvdisasm` of the binary,
-- which `argus observe` records for both), must be the same. Where they differ (a pipelined
-- tile moved through registers and back to shared memory, asynchronous copies made
-- synchronous, spills), the variant's extra time holds that work too, not only the wait.
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
),
listing AS (
    /* first listing of each probe version's kernel: a version is one binary, so its
       listings agree, and the first stays as runs arrive (the probe's inputs do not move) */
    SELECT q.program_version, i.kernel, arg_min(q.run_id, q.run_seq) AS run_id
    FROM run AS q
    JOIN (SELECT DISTINCT run_id, kernel FROM instruction) AS i ON i.run_id = q.run_id
    WHERE q.program_version IN (SELECT variant_version FROM probes
                                UNION SELECT parent_version FROM probes)
    GROUP BY ALL
),
mix AS (
    SELECT l.program_version, l.kernel, l.run_id, sass_movement_opcode(i.sass) AS opcode,
           count(*) AS n
    FROM listing AS l
    JOIN instruction AS i ON i.run_id = l.run_id AND i.kernel = l.kernel
    WHERE sass_movement_opcode(i.sass) IS NOT NULL
    GROUP BY ALL
),
compared AS (
    SELECT r.variant_version, r.parent_version, pl.run_id AS parent_listing,
           vl.run_id AS variant_listing, m.opcode,
           coalesce(sum(m.n) FILTER (WHERE m.run_id = pl.run_id), 0)::BIGINT AS parent_n,
           coalesce(sum(m.n) FILTER (WHERE m.run_id = vl.run_id), 0)::BIGINT AS variant_n
    FROM resolved AS r
    JOIN listing AS pl ON pl.program_version = r.parent_version AND pl.kernel = r.kernel
    JOIN listing AS vl ON vl.program_version = r.variant_version AND vl.kernel = r.kernel
    LEFT JOIN mix AS m ON m.kernel = r.kernel AND m.run_id IN (pl.run_id, vl.run_id)
    GROUP BY ALL
),
footprint AS (
    SELECT variant_version, parent_version, parent_listing, variant_listing,
           coalesce(list({'opcode': opcode, 'parent': parent_n, 'variant': variant_n}
                         ORDER BY opcode) FILTER (WHERE parent_n <> variant_n), []) AS changes
    FROM compared GROUP BY ALL
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
    CASE WHEN r.region_id IS NULL THEN 'no_target_region' WHEN c.passed IS NULL THEN 'unchecked' WHEN NOT c.passed THEN 'result_differs' ELSE 'ok' END AS status,
    -- 'probe_only' (the kernel's data-movement and synchronization instructions are the
    -- parent's), 'restructured' (they differ: footprint_changes) or 'not_recorded' (no SASS
    -- listing of the variant's or the parent's kernel in the store).
    CASE WHEN f.variant_version IS NULL THEN 'not_recorded' WHEN len(f.changes) = 0 THEN 'probe_only' ELSE 'restructured' END AS footprint,
    -- The opcodes whose static count differs, [{opcode, parent, variant}]; NULL when not recorded.
    f.changes AS footprint_changes,
    -- Runs of the two listings compared, {parent, variant}; NULL when not recorded.
    CASE WHEN f.variant_version IS NOT NULL THEN {'parent': f.parent_listing, 'variant': f.variant_listing} END AS footprint_listings
FROM resolved AS r
LEFT JOIN checks AS c ON c.variant_version = r.variant_version
    AND c.parent_version = r.parent_version
LEFT JOIN footprint AS f ON f.variant_version = r.variant_version
    AND f.parent_version = r.parent_version;
