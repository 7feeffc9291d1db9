"""The documentation is checked like code: a page that names a setting, a file or a link that is not there misleads.

Fast and offline: the README stays short and links every page under docs/, every relative link (and
its #anchor) resolves, every setting the README and docs name exists in the Settings model (read from
config/settings.py, never from a list kept here) with the default the configuration tables claim,
and every repository path docs/architecture.md names exists, with a module for each role, the GGS
and MKCT.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from artoo.config.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
ARCHITECTURE = ROOT / "docs" / "architecture.md"
PAGES = [README, *DOCS, ROOT / "bench" / "README.md"]
README_LIMIT = 200

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.S | re.M)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
ENV_NAME = re.compile(r"\bARTOO_[A-Z0-9_]*[A-Z0-9]")
FILE_SUFFIXES = frozenset({"py", "md", "toml", "json", "jsonl", "yaml", "log", "txt", "sh"})
"""``memory.py`` names a file, not the setting ``memory.py``."""


def sections() -> dict[str, type[BaseModel]]:
    """The nested settings models by their section name (``llm`` → LLMParams)."""
    found = {}
    for name, field in Settings.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            found[name] = field.annotation
    return found


SECTIONS = sections()
DOTTED = re.compile(r"(?<![\w./$-])(" + "|".join(SECTIONS) + r")\.([a-z_][a-z0-9_]*)(?![\w/-]|\.\w)")


def rel(page: Path) -> str:
    return str(page.relative_to(ROOT))


def prose(text: str) -> str:
    """The text without fenced code blocks: a link inside a code sample is not a link."""
    return FENCE.sub("", text)


def links(page: Path) -> list[str]:
    return LINK.findall(prose(page.read_text(encoding="utf-8")))


def local(target: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", target)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = CODE_SPAN.sub(r"\1", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(m.group(2)) for m in re.finditer(r"^(#{1,6})\s+(.+?)\s*#*$", prose(page.read_text(encoding="utf-8")),
                                                   re.M)}


def resolve(page: Path, target: str) -> tuple[Path, str]:
    path, _, anchor = target.partition("#")
    return ((page.parent / path).resolve() if path else page), anchor


def test_the_readme_stays_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_LIMIT, f"README.md has {lines} lines; move detail to a page under docs/"


def test_there_are_docs_pages():
    assert len(DOCS) >= 9, [rel(p) for p in DOCS]


@pytest.mark.parametrize("page", DOCS, ids=rel)
def test_every_docs_page_is_linked_from_the_readme(page: Path):
    targets = {resolve(README, t)[0] for t in links(README) if local(t)}
    assert page.resolve() in targets, f"README.md does not link {rel(page)}"


@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_every_relative_link_resolves(page: Path):
    broken = []
    for target in links(page):
        if not local(target):
            continue
        path, anchor = resolve(page, target)
        if not path.exists():
            broken.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{target}: no heading #{anchor} in {path.name}")
    assert not broken, f"{rel(page)}: " + "; ".join(broken)


def settings_named(text: str) -> set[tuple[str, str]]:
    """Every setting a text names: ``section.key`` in dotted form, or an ``ARTOO_*`` variable."""
    named = {(s, k) for s, k in DOTTED.findall(text) if k not in FILE_SUFFIXES}
    for name in ENV_NAME.findall(text):
        section, nested, key = name.removeprefix("ARTOO_").partition("__")
        named.add((section.lower(), key.lower()) if nested else ("", section.lower()))
    return named


def top_level_names() -> set[str]:
    """Top-level settings by field name and by every environment name that sets them."""
    names = set(Settings.model_fields)
    for field in Settings.model_fields.values():
        alias = field.validation_alias
        for choice in getattr(alias, "choices", ()):
            if isinstance(choice, str) and choice.startswith("ARTOO_"):
                names.add(choice.removeprefix("ARTOO_").lower())
    return names


@functools.cache
def source_text() -> str:
    """Every Python source of the repository but this file, in one string (git need not be there)."""
    folders = ("artoo", "bench", "config", "flows", "memory", "tasks", "tests")
    files = sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py") if p != Path(__file__).resolve())
    return "\n".join(p.read_text(encoding="utf-8") for p in files)


def read_by_code(variable: str) -> bool:
    """An ``ARTOO_*`` name that is no setting must still be one the code reads (``ARTOO_CONFIG``, a recipe's cache)."""
    return f'"{variable}"' in source_text()


def unknown_settings(text: str) -> list[str]:
    unknown = []
    top = top_level_names()
    for section, key in sorted(settings_named(text)):
        if section:
            model = SECTIONS.get(section)
            if model is None or key not in model.model_fields:
                unknown.append(f"{section}.{key}")
        elif key not in top and not read_by_code(f"ARTOO_{key.upper()}"):
            unknown.append(f"ARTOO_{key.upper()}")
    return unknown


@pytest.mark.parametrize("page", [README, *DOCS], ids=rel)
def test_every_setting_a_page_names_exists(page: Path):
    unknown = unknown_settings(page.read_text(encoding="utf-8"))
    assert not unknown, f"{rel(page)} names settings config/settings.py does not have: {', '.join(unknown)}"


@pytest.mark.parametrize(("text", "unknown"), [
    ("set `llm.max_tokens` and `ggs.time_budget_ms`", []),
    ("export ARTOO_LLM__TEMPERATURE=0.2 ARTOO_LAW1_MODE=deny ARTOO_HOME=/x", []),
    ("`llm.max_token` is sent", ["llm.max_token"]),
    ("ARTOO_GGS__BUDGET_MS=1", ["ggs.budget_ms"]),
    ("ARTOO_NO_SUCH_THING=1", ["ARTOO_NO_SUCH_THING"]),
    ("see `memory/potentials.py`, `artoo.memory.sops` and memory.py", []),
])
def test_the_settings_reader_finds_what_is_wrong(text: str, unknown: list[str]):
    assert unknown_settings(text) == unknown


def table_rows(text: str) -> list[list[str]]:
    rows = []
    for line in prose(text).splitlines():
        if line.startswith("|") and not re.match(r"^\|[\s|:-]+\|$", line):
            rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))])
    return rows


def value_of(written: str) -> object:
    text = written.strip().strip("`")
    if text.startswith("unset"):
        return None
    if text == "empty":
        return ""
    if text in ("true", "false"):
        return text == "true"
    try:
        return float(text)
    except ValueError:
        return text


def default_of(name: str) -> object:
    section, dot, key = name.partition(".")
    field = SECTIONS[section].model_fields[key] if dot else Settings.model_fields[section]
    default = field.default_factory() if field.default_factory is not None else field.default
    return str(default) if isinstance(default, Path) else default


def same(written: object, default: object) -> bool:
    if isinstance(written, float) and isinstance(default, int | float) and not isinstance(default, bool):
        return written == float(default)
    return written == default


def default_claims(text: str) -> list[tuple[str, object, object]]:
    """(setting, written default, real default) for each row ``| `setting`[, …] | default[, …] | …`` of a table."""
    claims = []
    for cells in table_rows(text):
        if len(cells) < 3:
            continue
        names = CODE_SPAN.findall(cells[0])
        known = [n for n in names if (n.partition(".")[0] in SECTIONS and "." in n) or n in Settings.model_fields]
        values = [v for v in cells[1].split(", ") if v]
        if not known or len(known) != len(names) or len(values) != len(known):
            continue
        claims += [(n, value_of(v), default_of(n)) for n, v in zip(known, values, strict=True)]
    return claims


def test_the_configuration_tables_state_the_real_defaults():
    claims = default_claims((ROOT / "docs" / "configuration.md").read_text(encoding="utf-8"))
    assert len(claims) >= 40, "the configuration tables lost their defaults"
    wrong = [f"{name}: written {written!r}, really {real!r}" for name, written, real in claims
             if not same(written, real)]
    assert not wrong, "docs/configuration.md: " + "; ".join(wrong)


def test_a_wrong_default_is_noticed():
    claims = default_claims("| setting | default | meaning |\n|---|---|---|\n| `llm.answer_tokens` | 512 | x |\n"
                            "| `ggs.alpha`, `ggs.beta` | 0.6, 0.3 | y |\n")
    assert [(n, same(w, r)) for n, w, r in claims] == [("llm.answer_tokens", False), ("ggs.alpha", True),
                                                        ("ggs.beta", True)]


REPO_PATH = re.compile(r"^[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*/?$")


def named_paths(text: str) -> set[str]:
    """Repository paths a page names: backticked ``tasks/ggs/maths.py`` or ``memory/``; ``(flows/x.py)`` in mermaid."""
    spans = set(CODE_SPAN.findall(prose(text)))
    for block in re.findall(r"^```mermaid\n(.*?)^```", text, re.S | re.M):
        spans.update(re.findall(r"\(([\w./-]+/[\w./-]*)\)", block))
    return {s for s in spans if "/" in s and REPO_PATH.match(s) and not s.startswith(("/", "~", "$"))}


def test_every_path_the_architecture_page_names_exists():
    paths = named_paths(ARCHITECTURE.read_text(encoding="utf-8"))
    assert len(paths) >= 30, sorted(paths)
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, f"docs/architecture.md names paths that do not exist: {', '.join(missing)}"


def concept_modules() -> dict[str, list[str]]:
    """The table under "Where each concept lives": its first cell's words → the paths its other cells name."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    table = text.split("## Where each concept lives", 1)[1].split("\n## ", 1)[0]
    return {cells[0]: [p for cell in cells[1:] for p in CODE_SPAN.findall(cell)] for cells in table_rows(table)[1:]}


@pytest.mark.parametrize("concept", ["R1", "R2", "R3", "R4a", "R4b", "R5", "R6", "R7", "GGS", "MKCT"])
def test_the_architecture_page_names_a_module_for(concept: str):
    modules = [p for label, paths in concept_modules().items() if re.search(rf"\b{concept}\b", label) for p in paths]
    real = [p for p in modules if p.endswith(".py") and (ROOT / p).is_file()
            or p.endswith("/") and (ROOT / p / "__init__.py").is_file()]
    assert real, f"docs/architecture.md names no existing module for {concept} ({modules})"


@pytest.mark.parametrize("symbol", ["R1", "R2", "R3", "R4a", "R4b", "R5", "R6", "R7", "D", "P", "Ω", "L", "∇L",
                                    "β_eff", "M_att", "M_dec", "Megram", "SOP"])
def test_the_architecture_page_defines(symbol: str):
    text = ARCHITECTURE.read_text(encoding="utf-8")
    assert re.search(rf"(?<!\w){re.escape(symbol)}(?!\w)", text), f"docs/architecture.md never mentions {symbol}"


@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_no_page_sends_a_reader_outside_the_repository(page: Path):
    text = page.read_text(encoding="utf-8")
    assert "../shared/" not in text, f"{rel(page)} points outside the repository (../shared/)"
