-- Collective communication instances (all-reduce, all-gather, ...) seen by one rank.
-- Provenance: Kineto traces (NCCL kernel events carry 'Collective name', 'In/Out msg nelems',
-- 'dtype', 'Process Group Name/Ranks'; gloo: c10d host ops with gloo worker annotations) and the
-- argusdb spans recorder (argusdb/collectors/torchdist). The same instance on every rank of its group has
-- the same (launch group, pg, seq): join on them.
-- @batch: collective
-- @split: never
CREATE TABLE IF NOT EXISTS collective (
    -- Run (one rank's artefact) the instance was traced in.
    -- @key: run
    run_id VARCHAR NOT NULL,
    -- Rank that traced it (torch.distributed global rank).
    rank INTEGER NOT NULL,
    -- Process group name (torch.distributed group_name, Kineto 'Process Group Name'); '?' when
    -- the artefact does not say (CUDA-only traces).
    pg VARCHAR NOT NULL,
    -- Global ranks of the group as the artefact lists them, e.g. '[0, 1]'; NULL when unknown.
    pg_ranks VARCHAR,
    -- Sequence number of the instance in its group: the process group's own counter where the
    -- source gives it (spans recorder), else the ordinal of the group's collectives in the trace.
    seq BIGINT NOT NULL,
    -- Operation, normalized: 'allreduce', 'allgather', 'reducescatter', 'broadcast', 'reduce',
    -- 'alltoall', 'barrier', or the source's own name.
    op VARCHAR NOT NULL,
    -- Element type as the source names it (e.g. 'BFloat16', 'bfloat16'); NULL when unknown.
    dtype VARCHAR,
    -- Bytes per element; NULL when unknown.
    elem_bytes INTEGER,
    -- Elements in this rank's input message.
    in_nelems BIGINT,
    -- Elements in this rank's output message.
    out_nelems BIGINT,
    -- Ranks in the group.
    group_size INTEGER,
    -- Message size, bytes, as nccl-tests counts it: max(in, out) elements x bytes per element.
    bytes BIGINT,
    -- Start, ns, on the run's clock (see clock).
    start_ns BIGINT NOT NULL,
    -- End, ns, on the run's clock.
    end_ns BIGINT NOT NULL,
    -- Duration, ns (end_ns - start_ns): device kernel time for 'device', or the span between the
    -- issuing stream reaching the call and being released (waits for peers included).
    dur_ns BIGINT NOT NULL,
    -- What start/end measure: 'device' (NCCL kernel, CUPTI), 'cuda_event' (events on the
    -- issuing stream), 'host' (host op / gloo worker thread).
    clock VARCHAR NOT NULL,
    -- Stream or thread the instance ran on, e.g. 'stream:7', 'thread:123'.
    track VARCHAR,
    -- NCCL kernel name when the instance is a traced kernel, else NULL.
    kernel VARCHAR,
    -- Step (0-based, the program's 'step' ranges) the instance was issued in; NULL outside steps.
    step INTEGER,
    -- Ordinal of the record in the reader's output: lineage to the artefact.
    src_row BIGINT NOT NULL
);

-- Time intervals of a run that are neither kernel launches nor collectives: host ops, steps,
-- compute spans. Provenance: Kineto cpu_op / user_annotation events (kind 'host_op',
-- 'annotation'; a 'step' annotation is kind 'step'), the spans recorder (kind 'step', 'span').
-- @batch: trace_span
-- @split: never
CREATE TABLE IF NOT EXISTS trace_span (
    -- Run the span was traced in.
    -- @key: run
    run_id VARCHAR NOT NULL,
    -- Rank that traced it; NULL for a single-process run.
    rank INTEGER,
    -- 'host_op' (torch op), 'annotation' (record_function range), 'step' (the program's step
    -- range) or 'span' (a recorded device span of a record_function range).
    kind VARCHAR NOT NULL,
    -- 'compute', 'communication', 'host' or 'step': what the span does, for overlap.
    role VARCHAR NOT NULL,
    -- Name as traced (op name, annotation name).
    name VARCHAR NOT NULL,
    -- Stream or thread, e.g. 'stream:0', 'thread:896'.
    track VARCHAR,
    -- Step (0-based) the span belongs to; NULL outside steps.
    step INTEGER,
    -- Start, ns, on the run's clock (see clock).
    start_ns BIGINT NOT NULL,
    -- End, ns, on the run's clock.
    end_ns BIGINT NOT NULL,
    -- Duration, ns.
    dur_ns BIGINT NOT NULL,
    -- 'device', 'cuda_event' or 'host' (see collective.clock).
    clock VARCHAR NOT NULL,
    -- Ordinal of the record in the reader's output.
    src_row BIGINT NOT NULL
);
