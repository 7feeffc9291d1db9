"""The import graph is part of the design: one namespace, one direction, no cycles, roles apart.

Every folder of the design card installs under ``artoo.*`` (pyproject's package-dir), and the
layers run bottom to top: config (settings, contracts) ← memory ← tasks ← flows ← the app
(runner, servers, demo) ← bench ← the CLI.  Imports inside functions count too.  A role talks
to another only through the flow and the bus, and pure logic stays free of Prefect: only the
named edge modules import it.  A module that imports only when others were imported first
hides a cycle, so each one is also imported alone; no two modules import each other, even
inside one layer; and each package says what it holds and exports what its ``__all__`` names.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAPPING: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
LAYERS = [("artoo.config", 0), ("artoo.memory", 1), ("artoo.tasks", 2), ("artoo.flows", 3),
          ("artoo.servers", 4), ("artoo.runner", 4), ("artoo.demo", 4), ("artoo.chat", 4), ("artoo.timeline", 4),
          ("artoo.quiet", 4), ("artoo.preload", 4), ("artoo.inflight", 4),
          ("artoo.bench", 5), ("artoo.eval", 5), ("artoo.cli", 6)]
ROLES = {"perceiver", "planner", "executor", "agent_validator", "meta_validator"}
PREFECT_EDGE = {"artoo.config.compat", "artoo.tasks.roles.task", "artoo.tasks.ggs.task", "artoo.tasks.bus.events",
                "artoo.tasks.tools.runner"}


def module_files() -> dict[str, Path]:
    """Every module of the installed namespace, by dotted name, found through pyproject's mapping."""
    found: dict[str, Path] = {}
    for package, folder in MAPPING.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found.setdefault(".".join((package, *parts)), path)
    return dict(sorted(found.items()))


MODULES = module_files()


def layer(name: str) -> int | None:
    hits = [rank for prefix, rank in LAYERS if name == prefix or name.startswith(prefix + ".")]
    return hits[0] if hits else None


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_every_folder_of_the_design_card_is_one_package_of_the_namespace():
    assert set(MAPPING) == {"artoo", "artoo.config", "artoo.memory", "artoo.tasks", "artoo.flows", "artoo.bench"}
    packages = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {name for name, path in MODULES.items() if path.name == "__init__.py"}
    assert packages == on_disk, "pyproject's packages list must name every package folder"
    for name in MODULES:
        assert layer(name) is not None or name == "artoo", f"{name} belongs to no layer"


@pytest.mark.parametrize("name", list(MODULES))
def test_imports_flow_downward(name: str):
    own = layer(name) if name != "artoo" else max(rank for _, rank in LAYERS)
    seen = imported(MODULES[name])
    stale = sorted(n for n in seen if n.split(".")[0] in {"config", "memory", "tasks", "flows", "bench"})
    assert not stale, f"{name} imports outside the artoo namespace: {stale}"
    upward = sorted(n for n in seen if (layer(n) or -1) > own)
    assert not upward, f"{name} imports upward: {upward}"


@pytest.mark.parametrize("role", sorted(ROLES))
def test_a_role_never_imports_another_role(role: str):
    path = MODULES[f"artoo.tasks.roles.{role}"]
    others = {f"artoo.tasks.roles.{r}" for r in ROLES - {role}}
    hits = sorted(n for n in imported(path) if any(n == o or n.startswith(o + ".") for o in others))
    assert not hits, f"role {role} imports other roles: {hits}"
    assert not {n for n in imported(path) if (layer(n) or 0) > layer("artoo.tasks")}


@pytest.mark.parametrize("name", [n for n in MODULES if (layer(n) or 9) <= layer("artoo.tasks")])
def test_pure_logic_stays_free_of_prefect(name: str):
    uses = {n for n in imported(MODULES[name]) if n == "prefect" or n.startswith("prefect.")}
    assert not uses or name in PREFECT_EDGE, f"{name} imports Prefect but is not a declared edge module"


IMPORT_EACH_ALONE = """
import importlib, json, sys, traceback
failures = {}
for name in json.loads(sys.argv[1]):
    for loaded in [m for m in sys.modules if m == "artoo" or m.startswith("artoo.")]:
        del sys.modules[loaded]
    try:
        module = importlib.import_module(name)
        if hasattr(module, "__path__"):  # a package: what its __all__ names, it exports
            exec(f"from {name} import *", {})
    except BaseException:
        failures[name] = traceback.format_exc(limit=3)
print(json.dumps(failures))
"""


PACKAGES = [name for name, path in MODULES.items() if path.name == "__init__.py"]


@pytest.mark.parametrize("name", PACKAGES)
def test_every_package_says_what_it_holds_and_exports_its_surface(name: str):
    """#27: a package's ``__init__`` is a paragraph on its concept and an ``__all__`` (resolved, name by
    name, by ``from … import *`` in the fresh interpreter below); ``__init__`` stays cheap to import."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    assert (ast.get_docstring(tree) or "").strip(), f"{name}: no docstring saying what the package holds"
    assigned = {target.id for node in tree.body if isinstance(node, ast.Assign)
                for t in node.targets for target in (t.elts if isinstance(t, ast.Tuple) else [t])
                if isinstance(target, ast.Name)}
    assert "__all__" in assigned, f"{name}: no __all__"


@pytest.fixture(scope="module")
def alone_failures(tmp_path_factory) -> dict[str, str]:
    """Import every module as the first artoo module of the process (third-party caches kept)."""
    cwd = tmp_path_factory.mktemp("elsewhere")  # off the source tree: only the installed namespace
    names = [n for n in MODULES if not n.endswith(".__main__")]
    done = subprocess.run([sys.executable, "-c", IMPORT_EACH_ALONE, json.dumps(names)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", [n for n in MODULES if not n.endswith(".__main__")])  # __main__ runs, by design
def test_every_module_imports_on_its_own(name: str, alone_failures: dict[str, str]):
    assert name not in alone_failures, alone_failures.get(name)


def surface(package: str) -> dict[str, str]:
    """What a package's ``__init__`` exports → the module of ours that defines it (eagerly imported, or
    named in its ``exports(__name__, {module: names})``)."""
    found: dict[str, str] = {}
    for node in ast.walk(ast.parse(MODULES[package].read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module in MODULES and node.module.startswith(package + "."):
            found.update((alias.asname or alias.name, node.module) for alias in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "exports" and len(node.args) == 2:
            for module, names in zip(node.args[1].keys, node.args[1].values, strict=True):
                found.update((n.value, f"{package}.{module.value}") for n in names.elts)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module → the modules of ours it imports (at the top or inside a function: both run); a name taken
    from a package's public surface is an import of the module that defines it."""
    via = {f"{package}.{name}": module for package in PACKAGES for name, module in surface(package).items()}
    return {name: {m for m in (via.get(n, n) for n in imported(path))
                   if m in MODULES and m != name and MODULES[m].name != "__init__.py"}
            for name, path in MODULES.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each import circle once, as the path that closes it (depth-first, white/grey/black)."""
    found, state, stack = [], dict.fromkeys(graph, 0), []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state[nxt] == 1:
                found.append(stack[stack.index(nxt):] + [nxt])
            elif state[nxt] == 0:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if state[node] == 0:
            visit(node)
    return found


def test_the_graph_sees_through_a_packages_public_surface():
    assert surface("artoo.tasks.blame")["call_targets"] == "artoo.tasks.blame.failure"  # exports(...)
    assert surface("artoo.tasks.llm")["OpenAICompatLLM"] == "artoo.tasks.llm.transport.client"  # imported eagerly
    assert "artoo.tasks.llm.transport.client" in import_graph()["artoo.flows.task_flow"]  # via artoo.tasks.llm


def test_no_import_circle_even_inside_a_layer():
    """#27: the layer rule cannot see two modules of one layer importing each other (lazily, even):
    ``servers.embedded`` ↔ ``servers.lingering`` did, until their shared app moved to ``artoo.servers.app``."""
    assert circles(import_graph()) == []


@pytest.mark.parametrize(("graph", "expected"), [
    ({"a": {"b"}, "b": set()}, []),
    ({"a": {"b"}, "b": {"a"}}, [["a", "b", "a"]]),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c", "a"]]),
])
def test_circles_finds_what_closes(graph, expected):
    assert circles(graph) == expected



TEST_DOUBLES = "artoo.tasks.llm.testing"
DEMO_AND_BENCH = ("artoo.demo", "artoo.bench", "artoo.eval")
"""The product's demonstration, benchmark and simulated eval: they run on the scripted server, so they may use the
LLM test doubles; nothing that serves a real run may (the CLI reaches them only through these)."""


def within(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def reaching(graph: dict[str, set[str]], prefix: str) -> set[str]:
    """Every module that imports a module under ``prefix``, directly or through others."""
    found = {name for name, deps in graph.items() if any(within(d, prefix) for d in deps)}
    while True:
        more = {name for name, deps in graph.items() if deps & found} - found
        if not more:
            return found
        found |= more


@pytest.mark.parametrize(("graph", "expected"), [
    ({"a": {"t.x"}, "b": {"a"}, "c": set(), "t.x": set()}, {"a", "b"}),
    ({"a": {"b"}, "b": {"c"}, "c": set(), "t.x": set()}, set()),
    ({"a": {"b"}, "b": {"c"}, "c": {"t"}, "t": set()}, {"a", "b", "c"}),
])
def test_reaching_follows_imports_through_other_modules(graph, expected):
    assert reaching(graph, "t") == expected


def test_runtime_code_never_imports_the_llm_test_doubles():
    """Roles, tasks, flows and the app's run path work against real endpoints only: the scripted server, the
    in-process fake and transcript replay are for tests, the demo and the bench."""
    users = reaching(import_graph(), TEST_DOUBLES)
    runtime = sorted(n for n in users if not within(n, TEST_DOUBLES, *DEMO_AND_BENCH, "artoo.cli"))
    assert runtime == [], f"runtime modules reach {TEST_DOUBLES}: {runtime}"
    assert "artoo.demo" in users  # the rule sees the demo's own (lazy) import of the scripted server


def test_the_llm_layer_is_at_most_eighteen_modules_each_saying_why_and_what_it_exports():
    import importlib

    layer = [name for name in MODULES if within(name, "artoo.tasks.llm") and not within(name, TEST_DOUBLES)]
    assert len(layer) <= 18, f"tasks/llm has {len(layer)} modules besides its test doubles: {layer}"
    for name in [n for n in MODULES if within(n, "artoo.tasks.llm")]:
        module = importlib.import_module(name)
        assert (module.__doc__ or "").strip(), f"{name}: no docstring saying why it exists"
        exported = getattr(module, "__all__", None)
        assert exported, f"{name}: no __all__"
        missing = [n for n in exported if not hasattr(module, n)]
        assert not missing, f"{name}: __all__ names what it does not define: {missing}"
