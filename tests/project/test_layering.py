"""Data flows one way: each stage imports only the stages before it, and no module imports
itself back through others.

core -> charts -> data -> metrics -> epitome -> tasks -> generation -> judging -> agreement -> validation
-> leaderboard -> (finetune, annotation) -> study -> (demo, cli). Validation (judges audited against
public expert ratings) needs judging and agreement; the model leaderboard shows its stamps.
A reader can trust a module's package to tell what it may depend on; this test keeps that true.
``charts`` (SVG drawing: the board's charts, the study's, the audit's and the fine-tuning card's
figures) comes right after ``core`` so that every stage draws with the same pieces, and no module
of the package imports a plotting library.

Inside ``leaderboard`` the same rule holds one level down, in this order:

    config -> submission -> scoring -> site -> (build, entries, pin, the package's __init__)

``config.py`` (the board file's reader) is a leaf: it imports nothing of ``leaderboard``, so every
sub-package may read a :class:`BoardConfig`. ``submission/`` decides whether a folder is a valid
entry; ``scoring/`` turns valid entries into rows and ranks (it may read a submission);
``site/`` renders rows (it may read both, never recompute); the top-level orchestrators
(``build``, ``entries``, ``pin``, ``__init__``) may import any of them. A sub-package imports only
itself, ``config`` and the sub-packages before it; a deferred (function-level) import and one
under TYPE_CHECKING count the same as one at the top of the file.

No import cycle at any level: the whole import graph of ``tide_bench`` (every package and
sub-package, deferred imports included) has no strongly connected component of two modules or more.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tide_bench

ORDER = [
    "core",
    "charts",
    "data",
    "metrics",
    "epitome",
    "tasks",
    "generation",
    "judging",
    "agreement",
    "validation",
    "leaderboard",
    "finetune",
    "annotation",
    "study",
    "demo",
    "cli",
]
PACKAGE = Path(tide_bench.__file__).parent


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tide_bench."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("tide_bench.")}
    return found


def test_stages_import_only_earlier_stages() -> None:
    violations = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if len(rel.parts) < 2 or rel.name == "__main__.py":  # entry points may reach the CLI
            continue
        stage = rel.parts[0]
        if stage not in ORDER:
            violations.append(f"{rel}: package '{stage}' is not in the layer order")
            continue
        allowed = set(ORDER[: ORDER.index(stage) + 1])
        for imported in _imports(path) - allowed:
            violations.append(f"{rel} imports tide_bench.{imported}")
    assert violations == []


def test_charts_are_drawn_with_the_shared_module_only() -> None:
    """One way to draw a chart: ``tide_bench.charts``; no module imports matplotlib (or another
    plotting library), and no other package defines its own SVG document."""
    plotting = ("matplotlib", "plotly", "seaborn", "bokeh", "altair")
    found = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            found += [f"{path.relative_to(PACKAGE)} imports {n}" for n in names if n.split(".")[0] in plotting]
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] != "charts" and "<svg " in path.read_text():
            found.append(f"{rel} writes its own <svg> element")
    assert found == []


# --- no import cycle at any level --------------------------------------------------------------

# No cycle is known: a new one fails the test (deferred and TYPE_CHECKING imports count).
KNOWN_CYCLES: set[tuple[str, ...]] = set()


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The tide_bench modules an import statement loads (a name imported from a package counts
    as the package's __init__ unless it is a submodule)."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in known}
    if node.level:  # relative: resolved against this module's package
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join([*base, *([node.module] if node.module else [])])
    else:
        source = node.module or ""
    if not source.startswith("tide_bench"):
        return set()
    out = set()
    for alias in node.names:
        sub = f"{source}.{alias.name}"
        out.add(sub if sub in known else source)
    return {t for t in out if t in known}


def _graph() -> dict[str, set[str]]:
    """Every import between tide_bench modules, at any depth of the file: a function-level
    (deferred) import and one under TYPE_CHECKING hide a cycle from the interpreter, not from
    the reader, so both count."""
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    known = set(paths)
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import | ast.ImportFrom):
                edges |= _targets(node, module, is_package, known)
        graph[module] = edges - {module}
    return graph


def _cycles(graph: dict[str, set[str]]) -> set[tuple[str, ...]]:
    """The strongly connected components with more than one module (Tarjan), each as a sorted tuple."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[tuple[str, ...]] = set()

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.add(tuple(sorted(component)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_at_any_level() -> None:
    """Over the whole graph, so a cycle inside a sub-package, between two sub-packages of one
    stage or through a package's ``__init__`` is found alike."""
    cycles = _cycles(_graph())
    assert cycles - KNOWN_CYCLES == set(), "import cycles (deferred and TYPE_CHECKING imports count)"
    assert KNOWN_CYCLES - cycles == set(), "fixed: remove from KNOWN_CYCLES"


# --- inside leaderboard: config -> submission -> scoring -> site -> top level -------------------

LEADERBOARD = "tide_bench.leaderboard"
LEADERBOARD_ORDER = ["config", "submission", "scoring", "site", "(top level)"]


def _leaderboard_layer(module: str) -> str | None:
    """The layer of a leaderboard module (None outside leaderboard): its sub-package, ``config``,
    or the top level (``build``, ``entries``, ``pin``, the package itself)."""
    if module != LEADERBOARD and not module.startswith(LEADERBOARD + "."):
        return None
    part = module.removeprefix(LEADERBOARD).removeprefix(".").split(".")[0]
    return part if part in LEADERBOARD_ORDER else "(top level)"


def _upward_in_leaderboard(graph: dict[str, set[str]]) -> list[str]:
    violations = []
    for module, targets in sorted(graph.items()):
        layer = _leaderboard_layer(module)
        if layer is None:
            continue
        for target in sorted(targets):
            target_layer = _leaderboard_layer(target)
            if target_layer is None:
                continue
            if LEADERBOARD_ORDER.index(target_layer) > LEADERBOARD_ORDER.index(layer) or (
                layer == "config" and target != module
            ):
                violations.append(f"{module} ({layer}) imports {target} ({target_layer})")
    return violations


def test_leaderboard_sub_packages_import_only_earlier_ones() -> None:
    assert _upward_in_leaderboard(_graph()) == []


def test_every_leaderboard_module_has_a_layer() -> None:
    """A new sub-package must be given its place in the order, not fall to the top level."""
    package = PACKAGE / "leaderboard"
    sub_packages = {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    assert sub_packages == set(LEADERBOARD_ORDER[1:-1])
    top = {p.stem for p in package.glob("*.py")}
    assert top == {"__init__", "build", "config", "entries", "pin"}


def test_the_layer_check_sees_an_upward_import() -> None:
    """The checker on a hand-made graph: a deferred submission -> site import, a config that
    reads scoring, and the allowed directions."""
    lb = LEADERBOARD
    graph = {
        f"{lb}.submission.validate": {f"{lb}.site.pages", f"{lb}.config"},
        f"{lb}.config": {f"{lb}.scoring.ranking"},
        f"{lb}.site.pages": {f"{lb}.scoring.scores", f"{lb}.submission.layout", "tide_bench.core.jsonio"},
        f"{lb}.build": {f"{lb}.site.pages", f"{lb}.submission.validate"},
    }
    assert _upward_in_leaderboard(graph) == [
        f"{lb}.config (config) imports {lb}.scoring.ranking (scoring)",
        f"{lb}.submission.validate (submission) imports {lb}.site.pages (site)",
    ]


def test_the_cycle_check_sees_a_deferred_import(tmp_path: Path) -> None:
    """The detector itself, on a hand-made graph and on real parsed code: a cycle closed by an
    import inside a function is found, a one-way import is not."""
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == {("a", "b")}
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == set()
    tree = ast.parse("def f():\n    from tide_bench.pkg.a import x\n")
    (node,) = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert _targets(node, "tide_bench.pkg.b", False, {"tide_bench.pkg.a", "tide_bench.pkg.b"}) == {"tide_bench.pkg.a"}
    rel = next(n for n in ast.walk(ast.parse("from . import a\n")) if isinstance(n, ast.ImportFrom))
    assert _targets(rel, "tide_bench.pkg.b", False, {"tide_bench.pkg", "tide_bench.pkg.a"}) == {"tide_bench.pkg.a"}
