"""Nsight Systems SQLite exports (``nsys export --type sqlite``).

Kernel launches (``CUPTI_ACTIVITY_KIND_KERNEL``) with their launching API call, every GPU of the
export (``TARGET_INFO_GPU``) and the export's schema and product version. Activity tracing only:
a clean timing run.
"""

from __future__ import annotations

from argusdb.collectors.nsys.sqlite import NsysSqliteReader

READERS = [NsysSqliteReader()]
