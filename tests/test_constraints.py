"""constraints.txt pins every dependency pyproject.toml declares, at versions pyproject allows.

The README's install command (run verbatim by CI) installs with ``-c constraints.txt``; a
dependency added to pyproject.toml without refreshing the file (.ci/constraints) would be
installed at whatever version upstream publishes that day, untested: that is how SQLAlchemy
2.1 killed the scheduler (issue #19).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]


def pins() -> dict[str, Version]:
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    found = [line.split("==") for line in lines if line.strip() and not line.startswith("#")]
    return {canonicalize_name(name): Version(version) for name, version in found}


def declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = [r for group in project.get("optional-dependencies", {}).values() for r in group]
    return [Requirement(r) for r in [*project["dependencies"], *extras]]


@pytest.mark.parametrize("requirement", declared(), ids=str)
def test_every_declared_dependency_is_pinned_within_its_range(requirement):
    pinned = pins().get(canonicalize_name(requirement.name))
    assert pinned is not None, f"{requirement.name} is not in constraints.txt: refresh it with .ci/constraints"
    assert requirement.specifier.contains(pinned, prereleases=True), f"{requirement.name}=={pinned} vs {requirement}"


def test_the_scheduler_safe_sqlalchemy_is_pinned():
    assert Version("2.0") <= pins()["sqlalchemy"] < Version("2.1")


def test_the_readme_installs_with_the_constraints():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- ci:setup:start -->(.*?)<!-- ci:setup:end -->", readme, re.S).group(1)
    assert "pip install -c constraints.txt -e '.[dev]'" in block
