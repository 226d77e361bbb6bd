"""Which files an ingest reads: the paths given, a folder's files of known kinds (never
outside the folder, unless symbolic links are followed on purpose)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from argusdb.collectors import readers
from argusdb.collectors.base import head_bytes
from argusdb.errors import InputError


def expand_paths(paths: Sequence[str | Path], follow_symlinks: bool = False) -> list[Path]:
    """Files named by ``paths``: a file as given; a directory, every file under it that a
    collector recognizes (sorted, hidden files and folders left out; folders that are links
    are not entered); a glob pattern (``*``, ``?``, ``[...]``, ``**`` across folders) that
    names no existing path, what it matches, sorted.

    A folder's walk stays inside the folder: a file there that is a link to a file outside it
    is refused, unless ``follow_symlinks`` (``argus ingest --follow-symlinks``); a link to a
    file inside the folder is taken.

    Raises:
        InputError: a path that does not exist, a pattern that matches nothing, or a link
            out of a folder.
    """
    import glob

    out: list[Path] = []
    for given in paths:
        p = Path(given)
        if not p.exists() and glob.has_magic(str(given)):
            hits = sorted(glob.glob(str(given), recursive=True))
            if not hits:
                raise InputError(str(given), "the pattern matches no file",
                                 "check the pattern (quote it so the shell leaves it alone)")
            out.extend(expand_paths(hits, follow_symlinks))
            continue
        if p.is_dir():
            root = p.resolve()
            for f in sorted(p.rglob("*")):
                rel = f.relative_to(p).parts
                if not f.is_file() or any(x.startswith(".") for x in rel):
                    continue
                if f.is_symlink() and not follow_symlinks and not f.resolve().is_relative_to(root):
                    raise InputError(str(f), f"a link to a file outside the folder {given}",
                                     "ingest that file by its own path, or pass "
                                     "--follow-symlinks to take the links out of the folder")
                if _known(f):
                    out.append(f)
        elif p.exists():
            out.append(p)
        else:
            raise InputError(str(given), "no such file or directory", "check the path")
    return out


def _known(path: Path) -> bool:
    head = head_bytes(path)
    return bool(head.strip()) and any(r.sniff(path, head) for r in readers())
