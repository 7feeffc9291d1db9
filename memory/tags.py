"""Memory tag conventions shared by the GGS (writer) and calibration (reader).

Kept in one place so the writer and the reader can never disagree on a tag.
"""

from __future__ import annotations

import re

ENV_LOCAL = "env:local"


def intent_slug(intent: str) -> str:
    """First three words of the intent, lower-cased and underscored (spec R2)."""
    words = re.findall(r"[a-z0-9]+", intent.lower())
    return "_".join(words[:3]) or "unknown"


def intent_space(intent: str) -> str:
    """The macro-event space ``intent:<slug>``."""
    return f"intent:{intent_slug(intent)}"


def tool_space(tool: str) -> str:
    """The micro-event space ``tool:<name>``."""
    return f"tool:{tool}"


def path_entity(target: str) -> str:
    """The micro-event entity ``path:<target>``."""
    return f"path:{target}"
