"""The LLM layer: one small interface (``LLM``) for every role, over OpenAI-compatible HTTP.

``OpenAICompatLLM`` is the real implementation; ``RequestBuilder`` (its base) fixes what each
request is and sends one early without importing ``openai``; ``ScriptedLLM`` (``artoo.tasks.llm.fake``)
is the in-process fake for pure-logic tests; ``cost_report`` turns CallRecords into the per-role cost
table.  Nothing is imported until asked for: ``artoo run`` sends R1 before ``openai`` is loaded.
"""

from artoo import exports

__all__, __getattr__ = exports(__name__, {
    "base": ("LLM", "ROLE_TIER", "TOOLS_SCHEMA", "CallRecord", "ToolCallRequest", "ToolTurn", "cost_report",
             "tier_of"),
    "client": ("OpenAICompatLLM",),
    "outgoing": ("RequestBuilder",),
    "fake": ("ScriptedLLM", "ScriptExhausted"),
})
