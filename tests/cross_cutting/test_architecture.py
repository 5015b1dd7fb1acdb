"""The import graph of ``src/dpuq`` has no circles, and the privacy-critical rooms import downward.

The graph is read from the source text (the AST), not by importing: every ``import`` and
``from ... import`` statement counts, at module level and inside functions (a function-level
import is still a dependency; it only runs later). ``from package import name`` points at the
submodule ``package.name`` when that is a module, and at ``package`` otherwise. Imports under
``if TYPE_CHECKING:`` count too: they are part of what a reader must hold in mind.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

# Layers that a privacy-critical module must never reach (directly or through others):
# privacy arguments must be checkable without reading the application around them.
PRIVACY_CRITICAL = "dpuq.mechanisms"
APPLICATION = (
    "dpuq.experiments",
    "dpuq.audit",
    "dpuq.commands",
    "dpuq.plotting",
    "dpuq.reporting",
    "dpuq.cli",
)


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def import_graph(root: Path = SRC, package: str = "dpuq") -> dict[str, set[str]]:
    """Map each module of ``package`` under ``root`` to the package's modules it imports."""
    files = {module_name(p, root): p for p in (root / package).rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = (
                    _resolve_relative(name, is_package, node.level, node.module)
                    if node.level
                    else (node.module or "")
                )
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in files else base)
            for target in targets:
                # `import dpuq.a.b` names the deepest module that exists
                while target and target not in files:
                    target = target.rpartition(".")[0]
                if target and target != name and target.split(".")[0] == package:
                    graph[name].add(target)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The non-trivial strongly connected components, each given as one circle through it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan; the graph is small (~100 nodes), recursion is fine
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
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
                components.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_circle_through(graph, sorted(comp)) for comp in components]


def _circle_through(graph: dict[str, set[str]], comp: list[str]) -> list[str]:
    """A shortest circle from the first module of a strongly connected component back to it."""
    members = set(comp)
    start = comp[0]
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [start, *reversed(path[:-1]), start] if v != start else [start, start]
                if w not in parents:
                    parents[w] = v
                    nxt.append(w)
        frontier = nxt
    return comp  # unreachable for a strongly connected component


def reachable(graph: dict[str, set[str]], start: str) -> dict[str, str]:
    """Every module reachable from ``start``, each mapped to the module that imports it."""
    seen: dict[str, str] = {}
    frontier = [start]
    while frontier:
        v = frontier.pop()
        for w in graph.get(v, ()):
            if w not in seen and w != start:
                seen[w] = v
                frontier.append(w)
    return seen


# The layers, lowest first (docs/architecture.md, "Layers", is the same table and a test below
# holds the two together): a module may import its own layer and the layers below it, never one
# above. The key is the first name under ``dpuq``. The order follows the data flow
# (data -> model -> scores -> private release -> sets/intervals -> report), with the
# data-free rooms that every method leans on below the methods:
LAYERS = (
    # foundations: checks, files, the privacy report type, versions (no statistics)
    (
        "_version",
        "_validation",
        "_atomic",
        "_progress",
        "_ledger_schema",
        "_ledger_gate",
        "_io_text",
        "_sealed",
        "report",
        "io",
    ),
    # the budget book: every release charges it
    ("ledger",),
    # private release: the exact samplers and the accountants (privacy-critical)
    ("mechanisms", "accountants"),
    # data-free planning and the front doors of the rooms below
    ("planning", "_bin_simulation", "accounting", "quantile", "_estimator"),
    # where the data are: chunked and Dask sufficient statistics (knows no method)
    ("scale",),
    # data and models: loaders, DP-SGD/DP-SGLD training, private learning
    ("data", "training", "learning"),
    # scores, sets and intervals: conformal prediction, private confidence intervals
    ("conformal", "inference"),
    # evaluation and the package's own face
    ("metrics", "plotting", "reporting", "dpuq"),
    # applications: paper reproductions, and the auditor (it calls releases; nothing
    # privacy-critical imports it)
    ("experiments", "audit"),
    # command line
    ("commands",),
    # entry point
    ("cli",),
)


def layer_of(module: str) -> int:
    parts = module.split(".")
    key = parts[1] if len(parts) > 1 else "dpuq"
    for rank, names in enumerate(LAYERS):
        if key in names:
            return rank
    raise KeyError(
        f"{module}: no layer in tests/cross_cutting/test_architecture.py LAYERS; add it there"
    )


def upward_layer_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import from a lower layer into a higher one, as ``importer -> imported``."""
    return [
        f"{a} (layer {layer_of(a)}) -> {b} (layer {layer_of(b)})"
        for a in sorted(graph)
        for b in sorted(graph[a])
        if layer_of(b) > layer_of(a)
    ]


def _in(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each privacy-critical module that reaches an application layer, with the path."""
    problems = []
    for module in sorted(graph):
        if not _in(module, (PRIVACY_CRITICAL,)):
            continue
        parents = reachable(graph, module)
        for target in sorted(t for t in parents if _in(t, APPLICATION)):
            path = [target]
            while path[-1] != module:
                path.append(parents[path[-1]])
            problems.append(" -> ".join(reversed(path)))
    return problems


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_graph_sees_the_whole_package(graph):
    assert "dpuq.mechanisms.exponential" in graph
    assert "dpuq.experiments.demo" in graph
    # a module-level and a function-level import are both read
    assert "dpuq.mechanisms" in graph["dpuq"]
    assert len(graph) > 50


def test_no_import_cycles(graph):
    cycles = find_cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_privacy_critical_modules_import_nothing_from_the_application(graph):
    problems = upward_imports(graph)
    assert not problems, "privacy-critical code reaches the application:\n" + "\n".join(problems)


def test_imports_run_downward_through_the_layers(graph):
    problems = upward_layer_imports(graph)
    assert not problems, "imports that run upward:\n" + "\n".join(problems)


def test_the_checks_can_fail_on_a_synthetic_graph():
    bad = {
        "dpuq.a": {"dpuq.b"},
        "dpuq.b": {"dpuq.c"},
        "dpuq.c": {"dpuq.a"},
        "dpuq.d": {"dpuq.d.e"},
        "dpuq.d.e": set(),
        "dpuq.mechanisms.x": {"dpuq.helper"},
        "dpuq.helper": {"dpuq.experiments.demo"},
        "dpuq.experiments.demo": set(),
    }
    assert find_cycles(bad) == [["dpuq.a", "dpuq.b", "dpuq.c", "dpuq.a"]]
    assert upward_imports(bad) == ["dpuq.mechanisms.x -> dpuq.helper -> dpuq.experiments.demo"]
    assert find_cycles({"dpuq.a": {"dpuq.b"}, "dpuq.b": set()}) == []
    upward = {"dpuq.mechanisms.x": {"dpuq.conformal.y"}, "dpuq.conformal.y": set()}
    assert upward_layer_imports(upward) == [
        "dpuq.mechanisms.x (layer 2) -> dpuq.conformal.y (layer 6)"
    ]
    with pytest.raises(KeyError, match="no layer"):
        layer_of("dpuq.unheard_of")


def test_an_upward_function_level_import_is_flagged(tmp_path):
    """Negative control on files: the layering check reads an import hidden in a function
    (as ``scale.partitions`` once imported the conformal estimators) and flags it."""
    pkg = tmp_path / "dpuq"
    for sub in ("scale", "conformal"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "conformal" / "est.py").write_text("from dpuq.scale import blocks\n")
    (pkg / "scale" / "blocks.py").write_text(
        "def score(model):\n    from dpuq.conformal.est import Est\n    return Est\n"
    )
    g = import_graph(tmp_path, "dpuq")
    assert g["dpuq.scale.blocks"] == {"dpuq.conformal.est"}
    assert upward_layer_imports(g) == [
        "dpuq.scale.blocks (layer 4) -> dpuq.conformal.est (layer 6)"
    ]
    assert find_cycles(g) == [["dpuq.conformal.est", "dpuq.scale.blocks", "dpuq.conformal.est"]]
    # the same package with the arrow turned round (the method hands scale a function) passes
    (pkg / "scale" / "blocks.py").write_text("def score(block_fn, x):\n    return block_fn(x)\n")
    g = import_graph(tmp_path, "dpuq")
    assert upward_layer_imports(g) == [] and find_cycles(g) == []


def test_every_package_has_a_layer_and_the_page_lists_the_same_layers(graph):
    """Each first name under dpuq sits in exactly one layer, and the table on
    docs/architecture.md ("Layers") lists the same names in the same order."""
    import re

    keys = {m.split(".")[1] if "." in m else "dpuq" for m in graph}
    named = [k for layer in LAYERS for k in layer]
    assert len(named) == len(set(named)), "a name sits in two layers"
    assert keys <= set(named), sorted(keys - set(named))
    page = (SRC.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d+) [^|]*\| ([^|]*)\|", section, flags=re.M)
    assert [int(r[0]) for r in rows] == list(range(len(LAYERS)))
    for (_, cell), layer in zip(rows, LAYERS, strict=True):
        listed = re.findall(r"`([\w.]+?)/?`", cell)
        names = [n.split(".")[-1] if n.startswith("dpuq.") else n.split(".")[0] for n in listed]
        names = ["dpuq" if n in ("dpuq", "__init__") else n for n in names]
        assert names == list(layer), (cell, layer)


def test_function_level_and_relative_imports_are_read(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from . import leaf\n")
    (pkg / "sub" / "leaf.py").write_text("def f():\n    from pkg import top\n    return top\n")
    (pkg / "top.py").write_text("import pkg.sub.leaf\n")
    g = import_graph(tmp_path, "pkg")
    assert g["pkg.sub"] == {"pkg.sub.leaf"}
    assert g["pkg.sub.leaf"] == {"pkg.top"}
    assert g["pkg.top"] == {"pkg.sub.leaf"}
    assert find_cycles(g) == [["pkg.sub.leaf", "pkg.top", "pkg.sub.leaf"]]


def test_architecture_page_names_modules_and_functions_that_exist():
    import importlib
    import re

    page = (SRC.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = []
    for name in sorted(set(re.findall(r"`(dpuq(?:\.\w+)+)", page))):
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for attr in parts[cut:]:
                obj = getattr(obj, attr, None)
            if obj is None:
                missing.append(name)
            break
    for path in sorted(set(re.findall(r"`(dpuq/[\w/]+\.py)`", page))):
        if not (SRC / path).exists():
            missing.append(path)
    assert not missing, missing
