-- Facts about the store itself, one row per key: 'schema_version' (an integer as text: the
-- version of argusdb/schema/ the store was written with; argusdb migrates older stores and refuses newer);
-- 'committing' (the runs of the last ingest, written just before its commit so that the
-- write-ahead log is never empty while a commit is pending: see STORE.argus-pending).
-- Provenance: argusdb, when it creates or migrates a store.
CREATE TABLE IF NOT EXISTS store_meta (
    -- Name of the fact, e.g. 'schema_version'.
    key VARCHAR PRIMARY KEY,
    -- Its value as text.
    value VARCHAR NOT NULL
);

-- Committed writes that added runs, in commit order: the snapshots 'argus query --as-of' reads
-- an embedded store at (a shared DuckLake store uses DuckLake's own snapshots instead).
-- Provenance: argusdb, in the transaction of each ingest; rows migrated from a schema-1 store
-- get one snapshot per run, at the run's ingest time.
CREATE TABLE IF NOT EXISTS store_snapshot (
    -- Snapshot number: 1, 2, 3 ... in commit order.
    snapshot_id BIGINT PRIMARY KEY,
    -- When the transaction committed (UTC).
    committed_at TIMESTAMP NOT NULL,
    -- Highest run_seq committed at this snapshot: the store as of the snapshot holds exactly the
    -- runs with run_seq <= this value.
    run_seq_max BIGINT NOT NULL,
    -- What committed: 'ingest', or 'migrated' for snapshots reconstructed by a migration.
    kind VARCHAR NOT NULL,
    -- Runs the transaction added.
    run_ids VARCHAR[] NOT NULL
);
