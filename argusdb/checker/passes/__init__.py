"""The checker's analysis passes, in the order they run (like sqlglot's optimizer rules).

===================  ======================================================================
pass                 what it does
===================  ======================================================================
resolve_names        :mod:`argusdb.checker.resolve`: FROM items and columns to catalog names
:mod:`.streams`      each evidence-bearing FROM item → a stream with its rows' metadata
:mod:`.combinations` where streams' rows meet (joins, groups, windows) and what each scope
                     outputs
===================  ======================================================================

:mod:`.syntax` holds the pure tree helpers they share. Every pass is a function of one
shared :class:`argusdb.checker.resolve.Analysis` (no pass inherits another);
:data:`argusdb.checker.analysis.PASSES` lists them in the order they run, and the streams and
combinations run scope by scope, children first.

Example:
    >>> from argusdb.checker.passes import combinations, streams, syntax
    >>> syntax.MAX_GROUPS
    20
"""
