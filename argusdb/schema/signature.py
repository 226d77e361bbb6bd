"""Interference signatures for reading: what a recording did not state is left out.

A run's stored signature (``Interference.signature`` of ``argusdb/collectors/base.py``) keeps a
``?`` where the tool did not say how many replay passes it took or which section set it
collected (``replay(? passes, ?)``): the checker compares stored signatures, so the text is
never rewritten in the store. Every message and answer shows :func:`readable` instead.

Example:
    >>> readable("replay(? passes, ?)+pc_sampling"), readable("replay(38 passes, ?)")
    ('replay+pc_sampling', 'replay(38 passes)')
    >>> readable("replay(? passes, full)")
    'replay(full)'
"""

from __future__ import annotations


def readable(sig: str) -> str:
    """``sig`` without the parts the recording did not state (see the module docstring)."""
    return (sig.replace("(? passes, ?)", "").replace(", ?)", ")")
            .replace("(? passes, ", "("))
