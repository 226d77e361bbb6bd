"""What the command line needs of the library besides :class:`~argusdb.api.Connection`: how an
ingest is prepared (paths, options, memory bound), program sources and their regions, variant
identities, a store copy, a shared store's upkeep, the catalog's documentation and the demo.
The CLI imports :mod:`argusdb.api`, :mod:`argusdb.answers`, :mod:`argusdb.observe` and this
module only.
"""

from __future__ import annotations

from argusdb import demo
from argusdb.collectors.regions import ProgramSource, parse_regions
from argusdb.ingest import INGEST_MEMORY_LIMIT, IngestResult, expand_paths, parse_options, prepare
from argusdb.ingest.variants import VariantOf
from argusdb.schema import catalog
from argusdb.store.copy import copy_store
from argusdb.store.upkeep import compact, expire

__all__ = [
           "INGEST_MEMORY_LIMIT",
           "IngestResult",
           "ProgramSource",
           "VariantOf",
           "catalog",
           "compact",
           "copy_store",
           "demo",
           "expand_paths",
           "expire",
           "parse_options",
           "parse_regions",
           "prepare",
]
