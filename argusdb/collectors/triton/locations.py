"""MLIR source locations as Triton writes them: ``loc(...)`` expressions and ``#locN`` aliases.

A location resolves to a *frame list*, innermost first: ``"f.py":12:3`` is one frame;
``"x"(#loc9)`` (a named location) is the frames of ``#loc9``; ``callsite(#a at #b)`` is the frames
of ``#a`` (the inlined code) followed by those of ``#b`` (where it was called from);
``fused[...]`` takes its first resolvable element; ``unknown`` has no frame.

Example:
    >>> defs = {"#loc9": '"/src/k.py":15:22', "#loc11": '"/x/standard.py":170:27'}
    >>> Locations(defs).frames("callsite(#loc11 at #loc9)")
    [('standard.py', 170), ('k.py', 15)]
"""

from __future__ import annotations

import os
import re

Frame = tuple[str, int]

_TOKEN = re.compile(r'\s*("(?:[^"\\]|\\.)*"|#[A-Za-z_][\w$.]*|callsite|fused|unknown|at\b|\d+'
                    r'|[():\[\],])')


class LocError(ValueError):
    """A location expression that does not parse."""


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            # Anything else (metadata of fused locs) is skipped a character at a time.
            pos += 1
            continue
        out.append(m.group(1))
        pos = m.end()
    return out


class Locations:
    """Resolves location expressions against the file's ``#locN = loc(...)`` aliases."""

    def __init__(self, defs: dict[str, str]) -> None:
        self.defs = defs
        self._resolving: set[str] = set()
        self._memo: dict[str, tuple[Frame, ...]] = {}

    def frames(self, expr: str) -> list[Frame]:
        """Frames of a location expression (the text inside ``loc(...)``), innermost first."""
        toks = _tokens(expr)
        frames, _ = self._parse(toks, 0)
        return frames

    def alias(self, name: str) -> tuple[Frame, ...]:
        """Frames of a ``#locN`` alias (memoized: aliases refer to each other a lot)."""
        if name in self._memo:
            return self._memo[name]
        if name not in self.defs:
            raise LocError(f"{name} is used but not defined")
        if name in self._resolving:
            raise LocError(f"{name} refers to itself")
        self._resolving.add(name)
        try:
            self._memo[name] = tuple(self.frames(self.defs[name]))
            return self._memo[name]
        finally:
            self._resolving.discard(name)

    def _parse(self, t: list[str], i: int) -> tuple[list[Frame], int]:
        if i >= len(t):
            raise LocError("location ends early")
        tok = t[i]
        if tok.startswith("#"):
            return list(self.alias(tok)), i + 1
        if tok == "unknown":
            return [], i + 1
        if tok == "callsite":
            if t[i + 1] != "(":
                raise LocError("callsite without '('")
            callee, j = self._parse(t, i + 2)
            if t[j] != "at":
                raise LocError("callsite without 'at'")
            caller, j = self._parse(t, j + 1)
            if t[j] != ")":
                raise LocError("callsite without ')'")
            return callee + caller, j + 1
        if tok == "fused":
            j, first, depth = i + 1, None, 0
            while j < len(t):
                if t[j] == "[":
                    depth += 1
                elif t[j] == "]":
                    depth -= 1
                    if depth == 0:
                        break
                elif depth == 1 and first is None and t[j] not in (",",):
                    try:
                        first, j = self._parse(t, j)
                        continue
                    except (LocError, IndexError):
                        first = None
                j += 1
            return first or [], j + 1
        if tok.startswith('"'):
            s = tok[1:-1]
            if i + 1 < len(t) and t[i + 1] == ":":
                line = int(t[i + 2])
                j = i + 3
                if j < len(t) and t[j] == ":":
                    j += 2
                return [(os.path.basename(s.replace("\\", "/")), line)], j
            if i + 1 < len(t) and t[i + 1] == "(":
                inner, j = self._parse(t, i + 2)
                if t[j] != ")":
                    raise LocError("named location without ')'")
                return inner, j + 1
            return [], i + 1
        raise LocError(f"unexpected {tok!r}")


def trailing_loc(line: str) -> str | None:
    """The text inside the ``loc(...)`` that ends an operation line, if any."""
    s = line.rstrip()
    if not s.endswith(")"):
        return None
    start = s.rfind("loc(")
    if start < 0 or (start > 0 and (s[start - 1].isalnum() or s[start - 1] == "_")):
        return None
    depth = 0
    for k in range(start + 3, len(s)):
        if s[k] == "(":
            depth += 1
        elif s[k] == ")":
            depth -= 1
            if depth == 0:
                return s[start + 4:k] if k == len(s) - 1 else None
    return None
