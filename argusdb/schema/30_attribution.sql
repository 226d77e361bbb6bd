-- Attribution splits, materialized: how the values of each source line of each run are split
-- over regions (one row per run, kernel, line and candidate region). The per-row shares
-- (view attribution_share) and the region sums (region_attribution) follow from it.
-- Provenance: built by argusdb.store.materialize from the views of argusdb/queries/attribution/ (PC -> source
-- line via the row itself or an `instruction` listing; library line -> kernel line via TTGIR
-- call sites; kernel line -> region via region_span; shared lines split by an independent
-- mapping run). Rebuilt per program version whenever the version's input fingerprint changes
-- (see `materialization`). A share is a contribution estimate; association_entropy is the
-- degree of sharing, not an error bound.
CREATE TABLE IF NOT EXISTS attribution_split (
    -- Run whose rows of this line are split.
    run_id VARCHAR NOT NULL,
    -- Program version of the run.
    program_version VARCHAR NOT NULL,
    -- Kernel (function) name.
    kernel VARCHAR NOT NULL,
    -- File name of the line (the row's own, else the instruction listing's for its pc).
    source_file VARCHAR,
    -- The line (1-based); NULL when no listing knows the instruction's line, and for scopes.
    source_line INTEGER,
    -- In-kernel scope name of scope rows (Proton instrumentation, 'load'), else NULL.
    scope VARCHAR,
    -- Region credited, '<program>/<kernel>/<name>'; '<program>/<kernel>/_unattributed' if none.
    region_id VARCHAR NOT NULL,
    -- Kernel lines in region_id that reach the line (the line itself, or TTGIR call sites).
    caller_lines INTEGER[],
    -- Fraction (0..1) of the line's values credited to region_id; sums to 1 over the line.
    share DOUBLE NOT NULL,
    -- Shannon entropy (bits) of the line's split over its candidate regions; 0 with one owner.
    association_entropy DOUBLE NOT NULL,
    -- Number of candidate regions of the line (1 = not shared; 0 = unattributed).
    n_candidates INTEGER NOT NULL,
    -- How the region was found: 'line', 'callsite', 'scope', 'mapping_run', 'ttgir_n_ops' or
    -- 'unattributed'.
    basis VARCHAR NOT NULL,
    -- Independent run whose per-region instruction counts set the split ('mapping_run' basis).
    mapping_run_id VARCHAR
);

-- Source line of each PC per program version and kernel, materialized: the newest `instruction`
-- listing (Nsight Compute source page or nvdisasm -g) of the version that gives the PC a file
-- (and, apart, a line). Provenance: argusdb.store.materialize, from `instruction` and `run`. Listings
-- are immutable and a newer one wins per PC, so a refresh folds in only the listings of runs
-- above its `materialization` row 'pc_line' instead of re-reading every listing of the store.
CREATE TABLE IF NOT EXISTS attribution_pc_line (
    -- Program version of the listings.
    program_version VARCHAR NOT NULL,
    -- Kernel (function) name.
    kernel VARCHAR NOT NULL,
    -- Program counter: byte offset from the start of the kernel's code.
    pc BIGINT NOT NULL,
    -- Source file name the newest listing that names one gives the PC.
    source_file VARCHAR,
    -- Source line (1-based) the newest listing that names one gives the PC.
    source_line INTEGER,
    -- Largest run_seq of the listings folded in for this PC.
    run_seq BIGINT NOT NULL
);

-- Region-level attributed evidence (what the `evidence` view shows as evidence_class
-- 'attributed'): attribution_share summed per run, kernel, region, scope and signal.
-- Provenance: argusdb.store.materialize, from attribution_share (observed rows x attribution_split).
CREATE TABLE IF NOT EXISTS region_attribution (
    -- Row identity: a negative 62-bit hash of (run, region, signal, scope); stable across refreshes.
    evidence_id BIGINT NOT NULL,
    -- Program version of the source rows.
    program_version VARCHAR NOT NULL,
    -- Task that collected the source rows.
    task_id VARCHAR NOT NULL,
    -- Run the source rows were measured in.
    run_id VARCHAR NOT NULL,
    -- Region credited ('<program>/<kernel>/<name>' or '<program>/<kernel>/_unattributed').
    region_id VARCHAR NOT NULL,
    -- Kernel (function) name.
    kernel VARCHAR NOT NULL,
    -- @include: _scope
    -- Signal name (inst_executed, warp_stall_samples, stall_<reason>, ...).
    signal VARCHAR NOT NULL,
    -- Sum of the region's shares of the source values, in unit.
    value DOUBLE,
    -- Unit of value.
    unit VARCHAR,
    -- Value-weighted mean of the association entropies (bits) of the shares summed here.
    association_entropy DOUBLE NOT NULL,
    -- Number of source rows (instructions x signal) that contributed.
    n_source_rows BIGINT NOT NULL,
    -- Number of those source rows that were shared with other regions (n_candidates > 1).
    n_shared_rows BIGINT NOT NULL,
    -- Independent mapping runs that set the splits of the shared rows (empty when none).
    mapping_run_ids VARCHAR[],
    -- observed_evidence.evidence_id of every source row: lineage to the artefact rows.
    source_evidence_ids BIGINT[]
);

-- What each materialization was built from. A materialization is stale when the fingerprint of
-- its inputs (runs, spans, version facts, listings, call sites, variant checks, and the SQL of
-- its modules) differs from the one recorded here; argusdb.store.materialize refreshes it before
-- anything reads it (attribution: the whole version, or only the runs added since;
-- derivation: the groups of derivation_input_state whose inputs changed).
-- Provenance: argusdb.store.materialize.
CREATE TABLE IF NOT EXISTS materialization (
    -- Materialization name: 'attribution', 'derivation', 'pc_line' (attribution_pc_line holds
    -- the listings of runs up to run_seq_built), 'inputs' (a digest of all inputs at
    -- the last refresh: readers skip the per-version comparison while it is unchanged), or
    -- 'rebuilt' (the version's attribution was rebuilt whole since the checker's metadata
    -- summary last read it; argusdb.api.metadata re-reads its rows and deletes the row).
    name VARCHAR NOT NULL,
    -- Program version the state covers ('' for a materialization built as a whole); for
    -- derivation the derivation group ('<derived signal>:<key>', derivation_input_state).
    program_version VARCHAR NOT NULL,
    -- md5 of the inputs every row depends on and of the module SQL the rows were built from
    -- (attribution: attribution_input_state.static_fingerprint; derivation: the group's
    -- derivation_input_state.fingerprint).
    fingerprint VARCHAR NOT NULL,
    -- md5 of the run ids the rows were built from (attribution; '' for derivation).
    runs_fingerprint VARCHAR NOT NULL,
    -- Largest run_seq among those runs (0 when none): runs above it are new.
    run_seq_built BIGINT NOT NULL,
    -- Rows the build wrote for this version.
    n_rows BIGINT NOT NULL,
    -- When the rows were built (UTC).
    built_at TIMESTAMP NOT NULL,
    PRIMARY KEY (name, program_version)
);
