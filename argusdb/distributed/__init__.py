"""Multi-process (torchrun) collection: per-rank recorder, bootstrap, launch-group ingest."""
