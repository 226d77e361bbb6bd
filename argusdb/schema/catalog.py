"""The catalog: documented SQL modules of ``argusdb/schema/`` and ``argusdb/queries/``.

A module is a ``.sql`` file; its path (``argusdb/queries/attribution/split.sql`` →
``attribution.split``) is its name. A module only declares tables, views and macros. The comment
block above each ``CREATE`` describes the object; the ``--`` comment above each column line
describes that column (meaning, unit, provenance). The store copies these into DuckDB with
``COMMENT ON`` so ``duckdb_columns()`` and ``argus schema`` show them, and a test fails on an
undocumented column.

A comment line that starts with ``@`` is an annotation, not documentation: ``-- @name`` or
``-- @name: value`` above a ``CREATE`` annotates the object, above a column line the columns
that follow it (as the column's doc does). ``argusdb/schema/`` uses them to state the evidence shape
once (:mod:`argusdb.schema.shape`): ``@batch: NAME`` (the collector batches a table receives),
``@key: KIND`` (a column the ingest fills, not the collector) and ``@scope`` (a scope
coordinate). ``@columns: MACRO`` above a view that selects a table macro's rows (the macro takes
a filter, the view is its unfiltered form) gives the view the column docs of the macro's body.

Example:
    >>> [m.name for m in schema_modules()][:2]
    ['00_program', '05_store']
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

from argusdb.schema.sqltext import literal as q

_CREATE = re.compile(
    r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP\s+)?(TABLE|VIEW|MACRO)\s+(?:IF\s+NOT\s+EXISTS\s+)?"
    r"([A-Za-z_][A-Za-z0-9_]*)", re.I)
_TABLE_COL = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s+([A-Z][A-Z]*(?:\[\])?)")
_VIEW_COL = re.compile(r"(?:\bAS\s+|\.|^\s*)([A-Za-z_][A-Za-z0-9_]*)\s*,?\s*$", re.I)
_KEYWORDS = {"PRIMARY", "UNIQUE", "FOREIGN", "CHECK", "CONSTRAINT"}
_CLAUSE = re.compile(r"^\s*(FROM|WHERE|GROUP|UNION|ORDER|HAVING|WINDOW|QUALIFY|JOIN|LEFT|SELECT)\b",
                     re.I)


@dataclass
class SqlObject:
    """A table, view or macro declared by a module, with its documentation."""

    kind: str
    name: str
    description: str
    columns: dict[str, str] = field(default_factory=dict)
    #: Annotations of the object (``@name: value`` comment lines above its ``CREATE``).
    annotations: dict[str, str] = field(default_factory=dict)
    #: Annotations per column (tables), e.g. ``{"run_id": {"key": "run"}}``.
    column_annotations: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Declared type per column (tables), as written: ``VARCHAR``, ``BIGINT``, ``INTEGER[]``.
    column_types: dict[str, str] = field(default_factory=dict)


_ANNOTATION = re.compile(r"^@([a-z_]+)\s*(?::\s*(.*))?$")


@dataclass
class Module:
    """One SQL module: its name, text and the objects it declares."""

    name: str
    path: str
    text: str
    objects: list[SqlObject] = field(default_factory=list)


def _parse(name: str, path: str, text: str) -> Module:
    mod = Module(name, path, text)
    doc: list[str] = []          # the run of '--' lines just read
    ann: dict[str, str] = {}     # the '-- @name: value' lines of that run
    col_doc: str | None = None   # doc that applies to the column lines that follow it
    col_ann: dict[str, str] = {}
    current: SqlObject | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("--"):
            a = _ANNOTATION.match(line[2:].strip())
            if a:
                ann[a.group(1)] = (a.group(2) or "").strip()
            else:
                doc.append(line[2:].strip())
            continue
        if doc or ann:
            col_doc, doc = " ".join(doc), []
            col_ann, ann = ann, {}
        m = _CREATE.match(raw)
        if m:
            current = SqlObject(m.group(1).lower(), m.group(2), col_doc or "",
                                annotations=col_ann)
            mod.objects.append(current)
            col_doc, col_ann = None, {}
            continue
        if current is None or not line:
            continue
        if current.kind == "table":
            t = _TABLE_COL.match(raw)
            if t and t.group(1).upper() not in _KEYWORDS:
                current.column_types.setdefault(t.group(1), t.group(2).upper())
                if col_doc:
                    current.columns.setdefault(t.group(1), col_doc)
                if col_ann:
                    current.column_annotations.setdefault(t.group(1), dict(col_ann))
        elif current.kind in ("view", "macro") and _CLAUSE.match(raw):
            col_doc = None
        elif current.kind in ("view", "macro") and col_doc:
            v = _VIEW_COL.search(line)
            if v and v.group(1).upper() not in {"SELECT", "DISTINCT"}:
                current.columns.setdefault(v.group(1), col_doc)
        if line.endswith(";"):
            current, col_doc, col_ann = None, None, {}
    return mod


#: A line ``-- @include: _NAME`` stands for the fragment ``_NAME.sql`` beside the module (a
#: block declared once, e.g. the scope columns of every evidence table).
_INCLUDE = re.compile(r"^[ \t]*-- @include: (_\w+)[ \t]*\n", re.M)


def _fragment(folder: object, name: str) -> str:
    """The fragment ``name.sql`` of ``folder``, without its leading comment lines."""
    path = folder.joinpath(f"{name}.sql")  # type: ignore[attr-defined]
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    while lines and lines[0].startswith("--"):
        lines.pop(0)
    return "".join(lines)


def _modules(package: str) -> list[Module]:
    return list(_parsed(package))


@cache
def _parsed(package: str) -> tuple[Module, ...]:
    """The package's modules, read and parsed once per process (they ship with the code)."""
    root = resources.files(package)
    out: list[Module] = []

    def walk(node: object, prefix: str) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):  # type: ignore[attr-defined]
            if child.is_dir() and not child.name.startswith("_"):
                walk(child, f"{prefix}{child.name}.")
            elif child.name.endswith(".sql") and not child.name.startswith("_"):
                text = _INCLUDE.sub(lambda m: _fragment(node, m.group(1)),
                                    child.read_text(encoding="utf-8"))
                out.append(_parse(prefix + child.name[:-4], f"{package.replace('.', '/')}/"
                                  f"{prefix.replace('.', '/')}"
                                  f"{child.name}", text))

    walk(root, "")
    return tuple(out)


def schema_modules() -> list[Module]:
    """Modules of ``argusdb/schema/`` (tables), in file-name order."""
    return _modules("argusdb.schema")


def query_modules() -> list[Module]:
    """Modules of ``argusdb/queries/`` (views and macros), in dependency-friendly name order.

    A module may name the modules it needs in a first-line comment ``-- requires: a.b, c``.
    """
    return list(_query_order())


@cache
def _query_order() -> tuple[Module, ...]:
    mods = _modules("argusdb.queries")
    by_name = {m.name: m for m in mods}
    from graphlib import TopologicalSorter

    deps: dict[str, set[str]] = {}
    for m in mods:
        first = m.text.lstrip().splitlines()[0] if m.text.strip() else ""
        req = re.match(r"--\s*requires:\s*(.+)$", first)
        deps[m.name] = {r.strip() for r in req.group(1).split(",")} if req else set()
        deps[m.name] &= set(by_name)
    return tuple(by_name[n] for n in TopologicalSorter(deps).static_order())


def all_objects() -> dict[str, SqlObject]:
    """Every documented object of every module, by name."""
    return dict(_all_objects())


@cache
def _all_objects() -> dict[str, SqlObject]:
    objs = {o.name: o for m in schema_modules() + query_modules() for o in m.objects}
    for obj in objs.values():
        # '-- @columns: MACRO' above a view that selects a table macro's rows: the macro's
        # column docs are the view's
        src = objs.get(obj.annotations.get("columns", ""))
        if src is not None and not obj.columns:
            obj.columns = dict(src.columns)
    return objs


def comment_statements() -> list[str]:
    """``COMMENT ON`` statements that copy the module docs into DuckDB."""

    stmts: list[str] = []
    for obj in all_objects().values():
        if obj.kind == "macro":
            continue
        stmts.append(f"COMMENT ON {obj.kind.upper()} {obj.name} IS {q(obj.description)}")
        for col, doc in obj.columns.items():
            stmts.append(f"COMMENT ON COLUMN {obj.name}.{col} IS {q(doc)}")
    return stmts


#: Bumped when what :meth:`argusdb.store.embedded.Store.ensure_schema` runs besides the modules
# changes.
CATALOG_REVISION = 1


@cache
def fingerprint() -> str:
    """sha256 of what a store's catalog is made from: every module's name and text, the
    ``COMMENT ON`` statements and :data:`CATALOG_REVISION`. A store records it with the
    catalog it wrote (see :meth:`argusdb.store.embedded.Store.catalog_current`)."""
    h = hashlib.sha256(f"revision {CATALOG_REVISION}\n".encode())
    for m in schema_modules() + query_modules():
        h.update(f"{m.name}\n{m.text}\n".encode())
    for stmt in comment_statements():
        h.update(f"{stmt}\n".encode())
    return h.hexdigest()
