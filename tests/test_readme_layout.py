"""The layout table of docs/layout.md lists every folder of the repository."""

from __future__ import annotations

import re
import subprocess

from tests.conftest import ROOT

#: Folders that get a row of their own; other folders (tests mirroring the package, tools,
#: recordings) are named in their parent's row. Deeper folders are recordings that their
#: tool folder's README describes.
_ROWS = ("argusdb/", "argusdb/collectors/", "argusdb/queries/")
_DEPTH = 3


def _folders() -> set[str]:
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    out = set()
    for f in files:
        parts = f.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            out.add("/".join(parts[:i]) + "/")
    return out


def test_layout_table_lists_every_folder() -> None:
    text = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    table = text.split("## Layout", 1)[1].split("\n## ", 1)[0]
    rows = set(re.findall(r"^\| `([^`]+/)` \|", table, flags=re.M))
    mentioned = set(re.findall(r"`([\w./-]+/)`", table))
    missing = []
    for f in sorted(_folders()):
        depth = f.count("/")
        if depth == 1 or (depth == 2 and f.startswith(_ROWS)):
            if f not in rows:
                missing.append(f)
        elif depth <= _DEPTH and f not in rows and \
                f.rstrip("/").rsplit("/", 1)[-1] + "/" not in mentioned:
            missing.append(f)
    assert missing == []
