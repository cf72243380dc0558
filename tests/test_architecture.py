"""The layout holds: one-way layers, no import cycles, no reaching into private members, small modules (P1, P2).

Issue "Layered core" asks for dependencies that run one way (models -> config -> retrieval / recall /
write -> store -> evaluation -> apps), no import cycle among the project's modules (lazy imports
included), no module reaching into another module's private members and no module over ~600
lines. This test is the check: it parses every module's AST (imports inside functions count;
imports under ``if TYPE_CHECKING:`` do not, as they never run).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("shared_core", "langchain_recall_gate", "llamaindex_recall_gate")
MAX_LINES = 600

# Layers of shared_core, lowest first: a module may import from its own layer or below.
LAYERS: dict[str, int] = {
    "errors": 0, "timeutil": 0, "text": 0, "version": 0,
    "model": 1,
    "config": 2, "audit": 2, "display": 2,
    "screening": 3, "embedding": 3, "retrieval": 3, "recall": 3,
    "write": 4,
    "store": 5, "testing": 5, "interop": 5,
    "evaluation": 6,
    "apps": 7, "__main__": 7,
}  # fmt: skip

# Private attributes of *dependencies* read on purpose, each with its reason (not our own modules).
ALLOWED_PRIVATE = {
    (
        "shared_core/store/chroma.py",
        "_server",
    ): "Chroma's HttpClient has no public timeout (documented there)",
    ("shared_core/store/chroma.py", "_session"): "same",
    ("langchain_recall_gate/vectorstore.py", "_select_relevance_score_fn"): (
        "the hook LangChain's VectorStore subclasses implement; delegated to the wrapped store"
    ),
    # LlamaIndex's template methods: calling the wrapped retriever's and embedding's hooks directly
    # keeps candidate text out of the instrumentation events retrieve()/get_*_embedding() dispatch.
    (
        "llamaindex_recall_gate/retriever.py",
        "_retrieve",
    ): "BaseRetriever's hook: no RetrievalEndEvent with ungated text",
    ("llamaindex_recall_gate/retriever.py", "_aretrieve"): "same, async",
    (
        "llamaindex_recall_gate/retriever.py",
        "_handle_recursive_retrieval",
    ): "keeps IndexNode recursion of retrieve()",
    ("llamaindex_recall_gate/retriever.py", "_ahandle_recursive_retrieval"): "same, async",
    (
        "llamaindex_recall_gate/embeddings.py",
        "_get_text_embeddings",
    ): "BaseEmbedding's hook: no EmbeddingEndEvent with text",
    ("llamaindex_recall_gate/embeddings.py", "_get_query_embedding"): "same, for queries",
}


def modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


MODULES = modules()


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(module: str, path: Path) -> list[tuple[str, int, list[str]]]:
    """(imported module, line, names) for every runtime import of ``module``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    out = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            out.extend((a.name, node.lineno, []) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, path, node)
            names = [a.name for a in node.names]
            # "from pkg import sub" imports the submodule pkg.sub when there is one
            subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in MODULES]
            rest = [n for n in names if f"{target}.{n}" not in MODULES]
            if rest or not subs:  # "from pkg import submodule" alone does not import from pkg's facade
                out.append((target, node.lineno, rest))
            out.extend((s, node.lineno, []) for s in subs)
    return out


def _own(name: str) -> str | None:
    """The project module ``name`` refers to (the longest known prefix), or None for a dependency."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in MODULES:
            return candidate
        parts.pop()
    return None


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for mod, path in MODULES.items():
        for target, _line, _names in imports_of(mod, path):
            own = _own(target)
            if own is None or own == mod:
                continue
            edges[mod].add(own)
    return edges


def test_no_import_cycle_among_the_projects_modules() -> None:
    """Tarjan over the runtime import graph (lazy imports included): no strongly connected component."""
    edges = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(MODULES):
        if v not in index:
            strong(v)
    assert cycles == []


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "shared_core" or len(parts) < 2:
        return None
    return LAYERS.get(parts[1])


def test_dependencies_run_one_way() -> None:
    """A shared_core module imports only from its own layer or below (models -> ... -> apps)."""
    wrong = []
    for mod, targets in graph().items():
        mine = _layer(mod)
        for t in targets:
            theirs = _layer(t)
            if mine is not None and theirs is not None and theirs > mine:
                wrong.append(f"{mod} -> {t}")
    assert wrong == []


def test_every_shared_core_folder_has_a_layer() -> None:
    """A new top-level part of shared_core must be placed in the layer table above."""
    tops = {m.split(".")[1] for m in MODULES if m.startswith("shared_core.") and m.count(".") >= 1}
    assert tops - set(LAYERS) == set()


def test_no_module_reaches_into_another_modules_private_members() -> None:
    """No ``from x import _name`` across modules, and no ``obj._name`` on anything but self/cls."""
    wrong = []
    for mod, path in MODULES.items():
        rel = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for target, line, names in imports_of(mod, path):
            for n in names:
                if n.startswith("_") and not n.startswith("__") and _own(target) not in (None, mod):
                    wrong.append(f"{rel}:{line} imports {target}.{n}")
        own = {  # private attributes this module defines itself (reading them on its own objects is fine)
            t.attr
            for n in ast.walk(tree)
            if isinstance(n, (ast.Assign, ast.AnnAssign))
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
        }
        for node in ast.walk(tree):
            if (
                not isinstance(node, ast.Attribute)
                or not node.attr.startswith("_")
                or node.attr.startswith("__")
            ):
                continue
            base = node.value
            if isinstance(base, ast.Name) and base.id in ("self", "cls"):
                continue
            if node.attr in own:
                continue
            if (rel, node.attr) in ALLOWED_PRIVATE:
                continue
            wrong.append(f"{rel}:{node.lineno} reads {ast.unparse(node)}")
    assert wrong == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_are_small(module: str) -> None:
    """No module over ~600 lines (rule tables live in data files)."""
    lines = MODULES[module].read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{module}: {lines} lines"
