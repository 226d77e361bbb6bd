-- Intra-kernel scope instances with their start times, for timelines (the Perfetto export).
-- Provenance: Proton instrumentation Chrome traces (argusdb/collectors/proton/trace.py), one row per
-- trace event, beside that event's 'scope_cycles' evidence row (same src_row).
-- @batch: scope_event
CREATE TABLE IF NOT EXISTS scope_event (
    -- Run (artefact) the trace came from.
    -- @key: run
    run_id VARCHAR NOT NULL,
    -- Kernel (function) name, the last frame of the event's call stack.
    kernel VARCHAR NOT NULL,
    -- Scope name as instrumented (triton.profiler.language scope), e.g. 'load'.
    scope VARCHAR NOT NULL,
    -- Scope path as the evidence row has it: '<kernel>/<scope>'.
    scope_path VARCHAR NOT NULL,
    -- CTA index, from the event's pid '<kernel> Core<sm> CTA<cta>' (as evidence.cta).
    cta VARCHAR NOT NULL,
    -- SM index, from the same pid (as evidence.sm).
    sm VARCHAR NOT NULL,
    -- Warp index within the CTA, from the event's tid 'warp <w>' (as evidence.warp).
    warp VARCHAR NOT NULL,
    -- Start, ns from the trace's own origin: the event's ts (µs) × 1000, exact (no float).
    -- Proton wrote ts as cycles / nominal frequency, so this is a cycle count at that frequency,
    -- comparable within the trace only.
    start_ns BIGINT NOT NULL,
    -- Duration, ns: the event's dur (µs) × 1000, exact; on the same nominal clock as start_ns.
    dur_ns BIGINT NOT NULL,
    -- Clock cycles of the instance, as the 'scope_cycles' evidence row (dur × Frequency (MHz)).
    cycles DOUBLE NOT NULL,
    -- Index of the event in traceEvents: the src_row of the matching evidence row.
    src_row BIGINT NOT NULL
);
