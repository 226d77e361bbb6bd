-- The formulas of the evidence shape, defined once (schema/ states its columns; see
-- argusdb/schema/shape.py). Ingest, attribution, derivation and the checker's metadata call these
-- macros rather than writing the formulas out.

-- Row identity of an observed value: run_seq * 2^32 + src_row. A run's rows form one id range,
-- evidence_id_of(run_seq, 0) to evidence_id_of(run_seq + 1, 0), which DuckDB's zone maps prune.
CREATE OR REPLACE MACRO evidence_id_of(run_seq, src_row) AS run_seq::BIGINT * 4294967296 + src_row;

-- Row identity of a computed (attributed or derived) value: a negative 62-bit id from a hash of
-- the value's keys (pass hash(...) of them), so it never meets an observed id.
CREATE OR REPLACE MACRO computed_evidence_id(h) AS -((h >> 2)::BIGINT) - 1;

-- True when a scope-tree path covers its kernel whole: no path, the kernel itself, or a path
-- that ends at the kernel ('it0/k' for kernel 'k'); false for a scope inside the kernel
-- ('k2/load'). NULL when the kernel is NULL and a path is given.
CREATE OR REPLACE MACRO kernel_wide_path(scope_path, kernel) AS
    scope_path IS NULL OR scope_path = kernel OR ends_with(scope_path, '/' || kernel);

-- True when an observed row is a kernel-wide value: no PC, no source line and no scope inside
-- the kernel. Ingest binds such rows of a program's kernels to the kernel's region; the others
-- reach regions through attribution.
CREATE OR REPLACE MACRO kernel_wide(pc, source_line, scope_path, kernel) AS
    pc IS NULL AND source_line IS NULL AND kernel_wide_path(scope_path, kernel);
