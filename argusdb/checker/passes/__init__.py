"""The checker's analysis passes, in the order they run (like sqlglot's optimizer rules).

===================  ======================================================================
pass                 what it does
===================  ======================================================================
resolve              :mod:`argusdb.checker.resolve`: FROM items and columns to catalog names
:mod:`.streams`      each evidence-bearing FROM item → a stream with its rows' metadata
:mod:`.combinations` where streams' rows meet (joins, groups, windows) and what each scope
                     outputs
===================  ======================================================================

:mod:`.syntax` holds the pure tree helpers they share; :mod:`argusdb.checker.analysis` drives
them scope by scope, children first.

Example:
    >>> from argusdb.checker.passes import combinations, streams, syntax
    >>> syntax.MAX_GROUPS
    20
"""
