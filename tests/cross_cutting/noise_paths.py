"""Which public functions can draw noise without a charge: a call graph of ``src/dpuq``.

Every release must go through :func:`dpuq.privacy.ledger.charge` before its noise, so that
``DPUQ_REQUIRE_LEDGER=1`` holds everywhere. This module reads the source (``ast``) of every
module of a package and builds a conservative call graph:

- a *node* is a function or a method (nested functions and lambdas belong to the function that
  holds them: a callback that charges makes its holder charging), or a name bound at a module's
  top level by an assignment (an alias, a ``functools.partial``, a lambda, a table of
  functions: what its value references);
- an *edge* is any reference to another function of the package, called or passed as a value
  (``f(...)``, ``mod.f``, ``self.f``, ``key=f``); names are resolved through every import,
  function-level ones and re-exports included;
- a node *charges* when it references ``dpuq.privacy.ledger.charge`` or
  ``dpuq.mechanisms.randomness.release_generator`` (which charges);
- a *draw* is a call of a numpy ``Generator`` method (``rng.integers(...)``, ...) inside
  ``dpuq.mechanisms`` (where all noise is drawn; ``randomness`` only hands out generators,
  resampling weights and seeds, which are not noise).

A node draws *uncharged* when it does not charge and either draws itself, or references a
node that draws uncharged, or passes ``ledger=CALLER_CHARGED`` (someone else paid) to a node
that draws at all. :func:`uncharged_public` lists the public callables (every name reachable
from the package and its public submodules without an underscore, and the public methods of
public classes) that draw uncharged. Static: a reference counts as a call, so a false alarm is
possible. It is not a proof, though: a reference to ``charge`` also counts as charging, so a
charge under a condition (``if ledger is not None: charge(...)``) or after the noise passes;
calls by computed name (``getattr(mod, "name")``, ``globals()[...]``) are not seen; nor is noise
drawn by code dpuq does not own (Opacus, torch, a user's ``run``). The dynamic tests of
``test_ledger_required.py`` (every release under ``DPUQ_REQUIRE_LEDGER=1``) cover those.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

#: numpy Generator methods: calling one is a random draw
DRAW_METHODS = {
    "integers", "random", "permutation", "permuted", "choice", "shuffle", "uniform", "normal",
    "standard_normal", "binomial", "multinomial", "geometric", "poisson", "exponential",
    "standard_exponential", "gumbel", "laplace", "bytes", "hypergeometric", "gamma", "beta",
}  # fmt: skip
#: the charge, and the one helper that checks ``random_state``, charges and hands out the generator
CHARGING = ("privacy.ledger.charge", "mechanisms.randomness.release_generator")


class _Module:
    def __init__(self, name: str, tree: ast.Module, is_package: bool):
        self.name = name
        self.package = name if is_package else name.rsplit(".", 1)[0]
        self.tree = tree
        self.imports: dict[str, str] = {}  # local name -> qualified name
        self.top_level: set[str] = set()  # names bound at module level (defs, imports)
        self.defs: dict[str, ast.AST] = {}  # qualified name -> node
        self.classes: dict[str, list[ast.expr]] = {}  # qualified class name -> bases
        for node in ast.walk(tree):  # every import, function-level ones included
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.imports[a.asname or a.name.split(".")[0]] = (
                        a.name if a.asname else a.name.split(".")[0]
                    )
            elif isinstance(node, ast.ImportFrom):
                base = self._absolute(node)
                for a in node.names:
                    if a.name != "*":
                        self.imports[a.asname or a.name] = f"{base}.{a.name}"
        for node in tree.body:
            self._collect(node, name)
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                # ``f = _g``, ``f = functools.partial(_g, ...)``, ``f = lambda ...: _g(...)``,
                # ``TABLE = {"k": _g}``: a public name bound to what it references
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        self.defs[f"{name}.{target.id}"] = node.value
                        self.top_level.add(target.id)
            if isinstance(node, ast.Import | ast.ImportFrom):
                self.top_level.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.top_level.add(node.name)

    def _absolute(self, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        parts = self.package.split(".")
        base = ".".join(parts[: len(parts) - node.level + 1])
        return f"{base}.{node.module}" if node.module else base

    def _collect(self, node, prefix: str) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            self.defs[f"{prefix}.{node.name}"] = node
        elif isinstance(node, ast.ClassDef):
            qual = f"{prefix}.{node.name}"
            self.classes[qual] = node.bases
            for child in node.body:
                self._collect(child, qual)


class CallGraph:
    """The call graph of a package's source (see the module docstring)."""

    def __init__(self, package: str, root: Path):
        self.package = package
        self.charging_roots = {f"{package}.{name}" for name in CHARGING}
        self.modules: dict[str, _Module] = {}
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(root.parent).with_suffix("")
            parts = list(rel.parts)
            is_package = parts[-1] == "__init__"
            name = ".".join(parts[:-1] if is_package else parts)
            self.modules[name] = _Module(name, ast.parse(path.read_text()), is_package)
        self._resolved: dict[str, str | None] = {}
        self.defs = {q: (m, n) for m in self.modules.values() for q, n in m.defs.items()}
        self.classes = {q: m for m in self.modules.values() for q in m.classes}
        self.edges: dict[str, set[str]] = {}
        self.paid_for: dict[str, set[str]] = {}  # targets called with ledger=CALLER_CHARGED
        self.forwards: dict[str, set[str]] = {}  # targets called with ledger=ledger
        self.draws: set[str] = set()
        for qual, (module, node) in self.defs.items():
            self._scan(qual, module, node)

    # ---------------------------------------------------------------- resolving names
    def resolve(self, qual: str, depth: int = 0) -> str | None:
        """The function, method or class that ``qual`` names, through re-exports."""
        if qual not in self._resolved:
            self._resolved[qual] = self._resolve(qual, depth)
        return self._resolved[qual]

    def _resolve(self, qual: str, depth: int) -> str | None:
        if depth > 20 or not qual.startswith(self.package):
            return None
        if qual in self.defs or qual in self.classes:
            return qual
        head, _, attr = qual.rpartition(".")
        module = self.modules.get(head)
        if module is not None and attr in module.imports:
            return self.resolve(module.imports[attr], depth + 1)
        if module is not None:  # a star import: look in the modules it imports from
            for node in module.tree.body:
                if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
                    found = self.resolve(f"{module._absolute(node)}.{attr}", depth + 1)
                    if found:
                        return found
        return None

    def _local(self, module: _Module, name: str) -> str | None:
        if name in module.imports:
            return self.resolve(module.imports[name])
        return self.resolve(f"{module.name}.{name}")

    def _methods(self, cls: str, name: str, depth: int = 0) -> list[str]:
        """``cls.name`` and the same method of the classes it derives from (in the package)."""
        if depth > 10 or cls not in self.classes:
            return []
        found = [f"{cls}.{name}"] if f"{cls}.{name}" in self.defs else []
        module = self.classes[cls]
        for base in module.classes[cls]:
            target = self._expr(module, base)
            if target:
                found += self._methods(target, name, depth + 1)
        return found

    def _expr(self, module: _Module, expr: ast.expr) -> str | None:
        if isinstance(expr, ast.Name):
            return self._local(module, expr.id)
        if isinstance(expr, ast.Attribute):
            inner = expr.value
            chain = [expr.attr]
            while isinstance(inner, ast.Attribute):
                chain.insert(0, inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id in module.imports:
                return self.resolve(".".join([module.imports[inner.id], *chain]))
        return None

    # ---------------------------------------------------------------- scanning
    def _scan(self, qual: str, module: _Module, node: ast.AST) -> None:
        refs, paid, forwards = set(), set(), set()
        cls = qual.rsplit(".", 1)[0] if qual.rsplit(".", 1)[0] in self.classes else None
        in_mechanisms = module.name.startswith(f"{self.package}.mechanisms") and not (
            module.name.endswith(".randomness")
        )
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name | ast.Attribute):
                if (
                    isinstance(sub, ast.Attribute)
                    and isinstance(sub.value, ast.Name)
                    and sub.value.id in ("self", "cls", "type(self)")
                    and cls is not None
                ):
                    refs.update(self._methods(cls, sub.attr))
                target = self._expr(module, sub)
                if target:
                    refs.add(target)
            if isinstance(sub, ast.Call):
                if (
                    in_mechanisms
                    and isinstance(sub.func, ast.Attribute)
                    and sub.func.attr in DRAW_METHODS
                    and not (isinstance(sub.func.value, ast.Name) and sub.func.value.id == "np")
                ):
                    self.draws.add(qual)
                for kw in sub.keywords:
                    if kw.arg == "ledger" and isinstance(kw.value, ast.Name | ast.Attribute):
                        name = kw.value.id if isinstance(kw.value, ast.Name) else kw.value.attr
                        target = self._expr(module, sub.func)
                        if target and name == "CALLER_CHARGED":
                            paid.add(target)
                        elif target and name == "ledger":  # the caller's own ledger, passed on
                            forwards.add(target)
        # a class reference stands for its constructor and its __call__
        for ref in list(refs):
            if ref in self.classes:
                refs.update(self._methods(ref, "__init__") + self._methods(ref, "__call__"))
        self.edges[qual] = refs
        self.paid_for[qual] = {
            m for t in paid for m in ([t] if t in self.defs else self._methods(t, "__init__"))
        }
        self.forwards[qual] = {
            m for t in forwards for m in ([t] if t in self.defs else self._methods(t, "__init__"))
        }

    # ---------------------------------------------------------------- the fixed point
    def charging(self) -> set[str]:
        """Functions that go through :func:`dpuq.privacy.ledger.charge`: they reference it (or
        ``release_generator``), or a helper that charges and draws nothing, or hand their own
        ``ledger`` on to a function that charges."""
        drawing = self.drawing()
        roots = self.charging_roots
        direct = set(roots) | {q for q in self.defs if self.edges[q] & roots}
        return self._closure(
            direct,
            lambda q, found: (
                bool(self.edges[q] & (found - drawing)) or bool(self.forwards[q] & found)
            ),
        )

    def _closure(self, seed: Iterable[str], step) -> set[str]:
        found = set(seed)
        changed = True
        while changed:
            changed = False
            for qual in self.defs:
                if qual not in found and step(qual, found):
                    found.add(qual)
                    changed = True
        return found

    def drawing(self) -> set[str]:
        """Functions that draw noise at all (charged or not)."""
        return self._closure(self.draws, lambda q, f: bool(self.edges[q] & f))

    def drawing_uncharged(self) -> set[str]:
        """Functions that can draw noise with no charge on the way (module docstring)."""
        drawing, charging = self.drawing(), self.charging()

        def step(q, found):
            if q in charging:
                return False
            return bool(self.edges[q] & found) or bool(self.paid_for[q] & drawing)

        return self._closure({q for q in self.draws if q not in charging}, step)


def public_callables(graph: CallGraph) -> dict[str, str]:
    """Every public callable: qualified source name -> one public path to it.

    The names without an underscore bound at the top of the package and of its public
    submodules (no part of the dotted name starts with ``_``), star imports included, that
    resolve to a function or a class of the package; for a class, its public methods,
    ``__init__`` and ``__call__`` (inherited ones included). Read from the source, so nothing
    is imported.
    """
    found: dict[str, str] = {}
    for name in sorted(graph.modules, key=lambda m: (m.count("."), m)):
        if any(part.startswith("_") for part in name.split(".")):
            continue
        module = graph.modules[name]
        names = set(module.top_level)
        for node in module.tree.body:  # star imports: the public names of their module
            if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
                source = graph.modules.get(module._absolute(node))
                if source is not None:
                    names |= source.top_level
        for local in sorted(names):
            if local.startswith("_"):
                continue
            target = graph.resolve(f"{name}.{local}")
            if target is None:
                continue
            path = f"{name}.{local}"
            if target in graph.defs:
                found.setdefault(target, path)
                continue
            for meth in _class_methods(graph, target):
                found.setdefault(meth, f"{path}.{meth.rsplit('.', 1)[1]}")
    return found


def _class_methods(graph: CallGraph, cls: str, depth: int = 0) -> list[str]:
    if depth > 10 or cls not in graph.classes:
        return []
    module = graph.classes[cls]
    own = [
        q
        for q in graph.defs
        if q.rsplit(".", 1)[0] == cls
        and (not q.rsplit(".", 1)[1].startswith("_") or q.endswith(("__init__", "__call__")))
    ]
    for base in module.classes[cls]:
        target = graph._expr(module, base)
        if target:
            own += _class_methods(graph, target, depth + 1)
    return own
