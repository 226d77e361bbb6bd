-- Program versions: one row per content address of what determines the machine code.
-- Provenance: computed by argusdb at ingest from the --program source, --option values and the
-- target the artefacts of the ingest state (TTGIR ttg.target, PTX .target, ncu compute
-- capability); without --program, from what the artefact states about itself (identity).
CREATE TABLE IF NOT EXISTS program_version (
    -- Content address: first 16 hex chars of sha256 over program, source sha256, options, target.
    program_version VARCHAR PRIMARY KEY,
    -- Program name: the stem of the source file (e.g. 'softmax'); NULL when ingested unbound.
    program VARCHAR,
    -- File name of the kernel source (never an absolute path).
    source_name VARCHAR,
    -- sha256 (hex) of the kernel source text.
    source_sha256 VARCHAR,
    -- Full kernel source text, so regions can be re-derived and quoted lines checked.
    source_text VARCHAR,
    -- Compile options, constexprs and toolchain versions given with --option, as a JSON object.
    options JSON,
    -- GPU target normalized to sm_<major><minor> (e.g. 'sm_90'); NULL when unknown.
    target VARCHAR,
    -- Parent program version for variants made by a transform task; NULL for originals.
    parent_version VARCHAR,
    -- Task that produced this version (transform tasks); NULL for originals.
    transform_task_id VARCHAR,
    -- Transform applied to the parent (e.g. 'forced_wait:load'); NULL for originals.
    transform VARCHAR,
    -- What the address of a version ingested without --program rests on, as the artefact
    -- states it (JSON): kernels_sha256 and n_kernels (sha256 over the sorted kernel names and
    -- their number), kernels (the first eight names), application (process name, where the
    -- format states one) and device (GPU model, see run.device_info.model); artefact_sha256
    -- when the artefact names none of these; NULL for versions of a --program source.
    identity JSON
);

-- Region line spans per program version. Provenance: '# region <name>' markers in the source.
CREATE TABLE IF NOT EXISTS region_span (
    -- Program version the span belongs to.
    program_version VARCHAR NOT NULL,
    -- Stable region ID '<program>/<kernel>[/<name>]'; does not change when lines move.
    region_id VARCHAR NOT NULL,
    -- The @triton.jit function that holds the region.
    kernel VARCHAR NOT NULL,
    -- Marker name; '_entry' for lines before the first marker; NULL for the whole kernel.
    name VARCHAR,
    -- First source line of the region (1-based, inclusive).
    start_line INTEGER NOT NULL,
    -- Last source line of the region (1-based, inclusive).
    end_line INTEGER NOT NULL,
    PRIMARY KEY (program_version, region_id)
);
