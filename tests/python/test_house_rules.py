"""The house rules of the code base that a reader relies on (issue 34), checked on the source itself:

- no module imports another module's private (`_name`) names: a private name may change without notice;
- the modules of `ingest/` import each other without circles (module-level and function-level imports both
  count: a circle hidden inside a function is still two modules that cannot be understood apart).

The oracle is Python's own parser (`ast`) over every file, not a list kept by hand.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted((ROOT / "ingest").rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def _imports(modules: dict[str, Path]):
    """(importer, imported module, imported name or None) for every import of an ingest module."""
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("ingest"):
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    yield (name, sub, None) if sub in modules else (name, node.module, alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("ingest"):
                        yield name, alias.name, None


def test_no_module_imports_a_private_name_of_another():
    modules = _modules()
    bad = [f"{src} imports {name} from {dst}" for src, dst, name in _imports(modules)
           if name and name.startswith("_") and not name.startswith("__") and dst != src]
    assert not bad, "\n".join(bad)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_cycle_finder_finds_a_planted_circle():
    """The finder itself can fail: a three-module circle and a self-contained tree."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": {"c"}}) == []


def test_ingest_modules_import_each_other_without_circles():
    modules = _modules()
    edges: dict[str, set[str]] = {}
    for src, dst, _ in _imports(modules):
        # a package's __init__ re-exports its modules; an import of the package itself is not an edge into them
        if dst in modules and dst != src and not src.startswith(dst + "."):
            edges.setdefault(src, set()).add(dst)
    circles = _cycles(edges)
    assert not circles, "import circles: " + "; ".join(" <-> ".join(c) for c in circles)


def test_library_code_never_uses_duckdbs_shared_default_connection():
    """`duckdb.sql/execute/query` run on one module-level connection shared by the whole process: a result left
    unfinished anywhere (a `fetchone()` of a one-row result is enough) makes the next call there fail with
    "connection has an unfinished result" (it failed CI once, test order dependent). Library code opens its own."""
    bad = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "duckdb"
                    and node.func.attr in ("sql", "execute", "query", "query_df", "from_query")):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not bad, "duckdb's default connection used at " + ", ".join(bad)
