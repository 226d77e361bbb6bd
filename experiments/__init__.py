"""Experiments built on argusdb that are not part of its unit suite (their tests run as a
phase of their own in .ci/run)."""
