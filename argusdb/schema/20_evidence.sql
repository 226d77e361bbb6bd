-- Observed evidence: every value a collector read from an artefact, one row per value.
-- Provenance: the collector named by run.collector; region_id is set at ingest when the row's
-- kernel is a @triton.jit function of --program and the row is kernel-wide (no PC, no line,
-- no scope_path below the kernel), else NULL (attribution maps PCs, lines and in-kernel scopes
-- onto regions, see argusdb/queries/attribution).
-- @batch: evidence
CREATE TABLE IF NOT EXISTS observed_evidence (
    -- Row identity: run_seq * 2^32 + src_row; stable across refreshes. Unique by construction
    -- (run_seq is unique, ingest refuses a run whose src_row repeats), so no key index: an index
    -- over every row made each ingest's checkpoint grow with the store (schema version 3).
    -- @key: evidence_id
    evidence_id BIGINT NOT NULL,
    -- Program version measured.
    -- @key: run
    program_version VARCHAR NOT NULL,
    -- Task that collected the value.
    -- @key: run
    task_id VARCHAR NOT NULL,
    -- Run the value was measured in.
    -- @key: run
    run_id VARCHAR NOT NULL,
    -- Region the value belongs to; NULL where not yet attributed (per-PC, per-line values).
    -- @key: region
    region_id VARCHAR,
    -- Kernel (function) name as the artefact gives it.
    kernel VARCHAR,
    -- Scope: rank (process of a multi-process launch, as torch.distributed numbers it) the value
    -- was measured on, or 'all'. Set by the store from the run's rank unless the collector gave one.
    -- @scope: launches
    -- @fill: run
    rank VARCHAR NOT NULL DEFAULT 'all',
    -- @include: _scope
    -- Program counter (byte offset in the kernel's code) for instruction-level values, else NULL.
    pc BIGINT,
    -- Source file name (no directory) the artefact maps the value to, else NULL.
    source_file VARCHAR,
    -- Source line the artefact maps the value to (1-based), else NULL.
    source_line INTEGER,
    -- Signal name, snake_case (inst_executed, warp_stall_samples, stall_<reason>, duration, ...).
    signal VARCHAR NOT NULL,
    -- The value, in unit.
    value DOUBLE,
    -- Unit of value: 'ns', 'count', 'samples', 'bytes', 'percent', or the tool's own unit.
    unit VARCHAR,
    -- Replay pass the counter was collected in (Nsight Compute), else NULL.
    replay_pass INTEGER,
    -- Path of the value in the tool's scope tree: frame names joined by '/' from below the root
    -- down to the frame that holds the value, e.g. 'it0/k' (Proton scope 'it0', kernel 'k') or
    -- 'k2/load' (instrumented scope 'load' inside kernel 'k2'); NULL where the artefact has no
    -- scope tree (cupti, kineto, nsys, ncu).
    scope_path VARCHAR,
    -- Ordinal (0-based) of the value in its reader's output for the artefact: lineage to the
    -- artefact record. Each reader's docstring says how ordinals map to records (a line, an
    -- event, a tree node); a record that holds several values gives several ordinals.
    src_row BIGINT NOT NULL
);

-- Kernel launches seen in traces. Provenance: cupti, kineto, nsys, proton chrome traces.
-- @batch: kernel_launch
CREATE TABLE IF NOT EXISTS kernel_launch (
    -- Run the launch was traced in.
    -- @key: run
    run_id VARCHAR NOT NULL,
    -- Kernel (function) name as traced; demangled where the tool demangles.
    kernel VARCHAR NOT NULL,
    -- 0-based index of this launch among launches of the same kernel in the run.
    launch INTEGER NOT NULL,
    -- Region of the kernel when it is a @triton.jit function of --program, else NULL.
    -- @key: region
    region_id VARCHAR,
    -- Start timestamp, ns, on the tool's clock.
    start_ns BIGINT,
    -- End timestamp, ns, on the tool's clock.
    end_ns BIGINT,
    -- Duration, ns (end_ns - start_ns).
    dur_ns BIGINT,
    -- Correlation ID linking the launch to its runtime API call.
    correlation_id BIGINT,
    -- Name of the host operator (torch op) that launched it, when traced.
    host_op VARCHAR,
    -- Runtime or driver API call that launched it (e.g. 'cudaLaunchKernel', 'cuLaunchKernel'),
    -- found through the correlation ID (kineto cuda_runtime/cuda_driver events, nsys
    -- CUPTI_ACTIVITY_KIND_RUNTIME); NULL when the artefact has no runtime records.
    launch_api VARCHAR,
    -- Start of that launching call on the host, ns, on the same clock as start_ns (the tool
    -- stamps API calls and kernels with one timestamp source): kineto cuda_runtime/cuda_driver
    -- ts, nsys CUPTI_ACTIVITY_KIND_RUNTIME.start, cupti RUNTIME/DRIVER record start. NULL
    -- where launch_api is.
    api_start_ns BIGINT,
    -- Duration of the launching call, ns (the call's end - api_start_ns); NULL where
    -- launch_api is.
    api_dur_ns BIGINT,
    -- Process ID of the host thread that made the call (kineto pid, nsys globalTid >> 24 &
    -- 0xFFFFFF, cupti process_id); NULL where the artefact does not say.
    api_pid BIGINT,
    -- Thread ID of the host thread that made the call (kineto tid, nsys globalTid & 0xFFFFFF,
    -- cupti thread_id); NULL where the artefact does not say.
    api_tid BIGINT,
    -- Lineage of the call: its record in the artefact (kineto: index in traceEvents; nsys:
    -- rowid in CUPTI_ACTIVITY_KIND_RUNTIME; cupti: 0-based line of the JSONL file).
    api_src_row BIGINT,
    -- Grid dimensions (x, y, z).
    grid_x INTEGER,
    grid_y INTEGER,
    grid_z INTEGER,
    -- Block dimensions (x, y, z).
    block_x INTEGER,
    block_y INTEGER,
    block_z INTEGER,
    -- Registers per thread.
    registers INTEGER,
    -- Shared memory per block (static + dynamic), bytes.
    shared_bytes BIGINT,
    -- Device index.
    device_id INTEGER,
    -- Stream index.
    stream_id BIGINT
);

-- Machine-code instructions with their source location.
-- Provenance: Nsight Compute source page (SASS view) or nvdisasm -g.
-- @batch: instruction
CREATE TABLE IF NOT EXISTS instruction (
    -- Run (artefact) the listing came from.
    -- @key: run
    run_id VARCHAR NOT NULL,
    -- Kernel (function) name.
    kernel VARCHAR NOT NULL,
    -- Program counter: byte offset from the start of the kernel's code.
    pc BIGINT NOT NULL,
    -- SASS text of the instruction.
    sass VARCHAR,
    -- Source file name (no directory) the instruction maps to.
    source_file VARCHAR,
    -- Source line (1-based) the instruction maps to.
    source_line INTEGER
);

-- Inlining call sites from Triton IR: a location in library code reached from a kernel line.
-- Provenance: TTGIR callsite(callee at caller) locations.
-- @batch: inline_site
CREATE TABLE IF NOT EXISTS inline_site (
    -- Run (artefact) the IR came from.
    -- @key: run
    run_id VARCHAR NOT NULL,
    -- Kernel (function) name.
    kernel VARCHAR NOT NULL,
    -- File name (no directory) of the inlined code, e.g. 'standard.py'.
    callee_file VARCHAR NOT NULL,
    -- Line of the inlined code.
    callee_line INTEGER NOT NULL,
    -- File name (no directory) of the kernel line that calls it.
    caller_file VARCHAR NOT NULL,
    -- Kernel line that calls it (outermost call site in the kernel's own file).
    caller_line INTEGER NOT NULL,
    -- Number of IR operations with this (callee, caller) pair.
    n_ops INTEGER NOT NULL
);
