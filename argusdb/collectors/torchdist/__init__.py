"""Reader of the argusdb per-rank spans recorder (``argusdb.observe.launch.recorder``)."""

from argusdb.collectors.torchdist.spans import SpansReader

READERS = [SpansReader()]
