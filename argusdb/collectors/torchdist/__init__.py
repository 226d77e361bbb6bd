"""Reader of the argusdb per-rank spans recorder (``argusdb.distributed.recorder``)."""

from argusdb.collectors.torchdist.spans import SpansReader

READERS = [SpansReader()]
