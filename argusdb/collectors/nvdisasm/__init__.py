"""``nvdisasm`` SASS listings with line information (``nvdisasm -g -gi -c K.cubin``).

- :mod:`collectors.nvdisasm.listing`: instructions (kernel, PC, SASS text, file and line).
"""

from __future__ import annotations

from argusdb.collectors.nvdisasm.listing import SassListingReader

READERS = [SassListingReader()]
