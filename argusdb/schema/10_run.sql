-- Tasks of measurement plans. An ingest is a 'collect' task of its own.
-- Provenance: argusdb (ingest, planner); cost columns are measured by the task runner.
CREATE TABLE IF NOT EXISTS task (
    -- Task identity (e.g. 't-<run_id>' for an ingest).
    task_id VARCHAR PRIMARY KEY,
    -- One of 'control', 'transform', 'collect', 'synthesize'.
    kind VARCHAR NOT NULL,
    -- Plan the task belongs to; NULL for a manual ingest.
    plan_id VARCHAR,
    -- Task configuration as JSON (collector, inputs, options).
    config JSON,
    -- 'done', 'failed', 'skipped' (an upstream task failed) or 'reused' (evidence already stored).
    status VARCHAR NOT NULL,
    -- Wall-clock cost of the task, seconds.
    wall_s DOUBLE,
    -- GPU time the task held a device, seconds; NULL when it used none.
    gpu_s DOUBLE,
    -- When the task finished (UTC).
    finished_at TIMESTAMP
);

-- One execution of one program version under one collection configuration.
-- Provenance: the collector's reading of the artefact header (tool, versions, replay passes).
CREATE TABLE IF NOT EXISTS run (
    -- Run identity: 16 hex chars of sha256(artefact sha256, program version).
    run_id VARCHAR PRIMARY KEY,
    -- Small integer ordinal of the run in this store; evidence_id = run_seq * 2^32 + row.
    run_seq BIGINT NOT NULL UNIQUE,
    -- Program version measured.
    program_version VARCHAR NOT NULL,
    -- Task that produced the run.
    task_id VARCHAR NOT NULL,
    -- Collector package that read the artefact (ncu, nvdisasm, triton, cupti, kineto, proton, nsys).
    collector VARCHAR NOT NULL,
    -- Artefact format, e.g. 'ncu.source_csv'.
    kind VARCHAR NOT NULL,
    -- File name of the artefact (no directory).
    artefact_name VARCHAR NOT NULL,
    -- sha256 (hex) of the artefact bytes; ingesting the same bytes twice is a no-op.
    artefact_sha256 VARCHAR NOT NULL,
    -- Tool that wrote the artefact (e.g. 'Nsight Compute').
    tool VARCHAR,
    -- Tool version as the artefact states it; NULL when it does not.
    tool_version VARCHAR,
    -- Export schema version as the artefact states it (e.g. nsys 3.13.2); NULL when absent.
    export_schema VARCHAR,
    -- Version of the argusdb reader that parsed the artefact.
    adapter_version VARCHAR NOT NULL,
    -- Canonical interference signature, e.g. 'replay(38 passes, full)+clock:none'.
    signature VARCHAR NOT NULL,
    -- True when durations of this run reflect unperturbed execution in the program (no counter
    -- replay, probes, sampling, nor a launch replayed out of its program: launch_replay).
    timing_clean BOOLEAN NOT NULL,
    -- Activity tracing (CUPTI activity API, nsys, Kineto) was active.
    activity_tracing BOOLEAN NOT NULL,
    -- torch.profiler was active (host-op tracing, Kineto).
    torch_profiler BOOLEAN NOT NULL,
    -- Kernels were replayed to collect counters (Nsight Compute).
    counter_replay BOOLEAN NOT NULL,
    -- Number of replay passes per kernel; NULL when not replayed or unknown.
    replay_passes INTEGER,
    -- Counter section set (e.g. 'full'); NULL when not replayed.
    section_set VARCHAR,
    -- PC sampling was active.
    pc_sampling BOOLEAN NOT NULL,
    -- Intra-kernel instrumentation (e.g. Proton scopes) was compiled in.
    instrumentation BOOLEAN NOT NULL,
    -- A forced wait (probe) was inserted in the program.
    forced_wait BOOLEAN NOT NULL,
    -- Kernels were serialized by the tool.
    serialized BOOLEAN NOT NULL,
    -- Clock control as the tool reports it ('none', 'base'); NULL when not reported.
    clock_control VARCHAR,
    -- Cache control as the tool reports it ('all', 'none'); NULL when not reported.
    cache_control VARCHAR,
    -- GPU name as the artefact states it (e.g. 'NVIDIA H200'); NULL when absent.
    device VARCHAR,
    -- Device facts the artefact states (compute capability, SM count, ...), JSON.
    device_info JSON,
    -- Other facts of the artefact header, JSON.
    meta JSON,
    -- Rank of the process the run measured, in a multi-process launch (torch.distributed rank);
    -- NULL for a single-process run. Provenance: the artefact (Kineto distributedInfo, the
    -- argusdb spans header) or the ingest's --rank.
    rank INTEGER,
    -- Number of ranks of the launch; NULL for a single-process run.
    world_size INTEGER,
    -- Launch group: runs of one multi-process launch (one torchrun) share it; NULL otherwise.
    launch_group VARCHAR,
    -- CUDA device ordinal the rank ran on (as the process numbered it); NULL when not stated.
    device_index INTEGER,
    -- When the run was ingested (UTC).
    ingested_at TIMESTAMP NOT NULL,
    -- The kernel ran as a replay of a launch captured from its program (restored inputs, other
    -- caches, no neighbouring kernels): durations of their own standing, not in-context timing.
    -- Provenance: the LAUNCH_REPLAY record of argusdb's replay worker's CUPTI file.
    launch_replay BOOLEAN NOT NULL DEFAULT false
);
