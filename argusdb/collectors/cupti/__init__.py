"""cupti-python activity records, one JSON object per line (``*.cupti.jsonl``).

Written by argusdb's own GPU driver (``gpu/``) with cupti-python's activity API:
``CONCURRENT_KERNEL`` records (name, start/end ns, grid, block, registers, correlation id) and
``RUNTIME`` records. Activity tracing only: a clean timing run.
"""

from __future__ import annotations

from argusdb.collectors.cupti.activity import ActivityJsonlReader

READERS = [ActivityJsonlReader()]
