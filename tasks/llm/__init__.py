"""The LLM layer: one small interface (``LLM``) for every role, over OpenAI-compatible HTTP.

``OpenAICompatLLM`` is the real implementation; ``ScriptedLLM`` (``artoo.tasks.llm.fake``) is
the in-process fake for pure-logic tests; ``cost_report`` turns CallRecords into the
per-role cost table.
"""

from artoo.tasks.llm.base import (
    LLM,
    ROLE_TIER,
    TOOLS_SCHEMA,
    CallRecord,
    ToolCallRequest,
    ToolTurn,
    cost_report,
    tier_of,
)
from artoo.tasks.llm.client import OpenAICompatLLM
from artoo.tasks.llm.fake import ScriptedLLM, ScriptExhausted

__all__ = [
    "LLM",
    "ROLE_TIER",
    "TOOLS_SCHEMA",
    "CallRecord",
    "OpenAICompatLLM",
    "ScriptExhausted",
    "ScriptedLLM",
    "ToolCallRequest",
    "ToolTurn",
    "cost_report",
    "tier_of",
]
