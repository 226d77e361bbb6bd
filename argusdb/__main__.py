"""``python -m argusdb``: the same as the ``argus`` command."""

from argusdb.cli import main

main()
