"""Roles talk through the flow and the bus: no role module imports another role module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROLES_DIR = Path(__file__).resolve().parents[1] / "tasks" / "roles"
SHARED = {"__init__", "prompting"}
ROLE_MODULES = sorted(p.stem for p in ROLES_DIR.glob("*.py") if p.stem not in SHARED)


def imported_modules(path: Path) -> set[str]:
    """Every module named by an import statement in ``path`` (``from x import y`` gives x and x.y)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def test_the_roles_are_all_there():
    assert {"perceiver", "planner", "executor", "agent_validator", "meta_validator"} <= set(ROLE_MODULES)


@pytest.mark.parametrize("role", ROLE_MODULES)
def test_role_imports_no_other_role(role):
    imports = imported_modules(ROLES_DIR / f"{role}.py")
    others = {f"tasks.roles.{other}" for other in ROLE_MODULES if other != role}
    assert not imports & others


@pytest.mark.parametrize("role", ROLE_MODULES)
def test_role_imports_nothing_upward(role):
    imports = imported_modules(ROLES_DIR / f"{role}.py")
    assert not {m for m in imports if m.split(".")[0] in {"flows", "artoo"}}
