-- Result checks of variants: does a variant compute what its parent computes? A variant's
-- evidence is used for derivation only when its latest check passed.
-- Provenance: the runner (relative error of the variant's output against the parent's on the
-- same inputs), or `argusdb.derive.record_check`.
CREATE TABLE IF NOT EXISTS variant_check (
    -- Variant program version checked.
    variant_version VARCHAR NOT NULL,
    -- Parent program version it was compared with.
    parent_version VARCHAR NOT NULL,
    -- Task that ran the check (usually the variant's transform or collect task).
    task_id VARCHAR,
    -- Relative error ||variant - parent|| / ||parent|| of the outputs (dimensionless).
    rel_err DOUBLE NOT NULL,
    -- Largest rel_err accepted as the same result (dimensionless).
    tolerance DOUBLE NOT NULL,
    -- rel_err <= tolerance.
    passed BOOLEAN NOT NULL,
    -- When the check was recorded (UTC).
    checked_at TIMESTAMP NOT NULL
);

-- Derived evidence, materialized: values inferred from perturbed variants, e.g. the exposed
-- latency of a region's loads from a forced-wait variant against its parent.
-- Provenance: built by argusdb.store.materialize from argusdb/queries/derivation/ over clean timing runs of a
-- checked variant and of its parent under the same collection. Every scope coordinate of a
-- row is 'all': a value is a statistic over the kept launches.
CREATE TABLE IF NOT EXISTS derived_evidence (
    -- Row identity: a negative 62-bit hash of (variant run, parent run, region, signal).
    evidence_id BIGINT NOT NULL,
    -- Program version the value describes: the parent (unperturbed) version.
    program_version VARCHAR NOT NULL,
    -- Task that made the variant (program_version.transform_task_id of the variant).
    task_id VARCHAR,
    -- Variant timing run the perturbed durations came from.
    run_id VARCHAR NOT NULL,
    -- Parent timing run the unperturbed durations came from.
    parent_run_id VARCHAR NOT NULL,
    -- Variant program version (the probe), bound to program_version by parent_version.
    variant_version VARCHAR NOT NULL,
    -- Target region of the probe, '<program>/<kernel>/<name>'.
    region_id VARCHAR NOT NULL,
    -- Kernel (function) name whose launches were compared.
    kernel VARCHAR NOT NULL,
    -- @include: _scope
    -- Signal name: 'exposed_latency'.
    signal VARCHAR NOT NULL,
    -- median(kept variant durations) - median(kept parent durations), ns.
    value DOUBLE,
    -- Unit of value: 'ns'.
    unit VARCHAR NOT NULL,
    -- Conditions the value holds under (variant, probe, run signature, check, intervals kept and
    -- dropped with reasons, medians, spread), JSON.
    conditions JSON NOT NULL,
    -- observed_evidence.evidence_id of the kept duration rows of both runs.
    source_evidence_ids BIGINT[]
);
