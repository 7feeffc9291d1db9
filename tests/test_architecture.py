"""The import graph is part of the design: it flows one way, and roles never import roles.

config (settings, contracts) ← memory ← tasks ← flows ← artoo (CLI).  A role talks to
another only through the flow and the bus, so a role module importing another role
module is a boundary violation.  Imports inside functions count too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {"config": 0, "memory": 1, "tasks": 2, "flows": 3, "artoo": 4}
ROLES = {"perceiver", "planner", "executor", "agent_validator", "meta_validator"}


def modules() -> list[Path]:
    return sorted(p for layer in LAYERS for p in (ROOT / layer).rglob("*.py"))


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_flow_downward(path: Path):
    own = LAYERS[path.relative_to(ROOT).parts[0]]
    upward = sorted(n for n in imported(path) if LAYERS.get(n.split(".")[0], -1) > own)
    assert not upward, f"{path.relative_to(ROOT)} imports upward: {upward}"


@pytest.mark.parametrize("role", sorted(ROLES))
def test_a_role_never_imports_another_role(role: str):
    path = ROOT / "tasks" / "roles" / f"{role}.py"
    others = {f"tasks.roles.{r}" for r in ROLES - {role}}
    hits = sorted(n for n in imported(path) if any(n == o or n.startswith(o + ".") for o in others))
    assert not hits, f"role {role} imports other roles: {hits}"


def test_the_layers_exist_and_hold_code():
    for layer in LAYERS:
        assert list((ROOT / layer).glob("*.py")), f"{layer}/ has no modules"
