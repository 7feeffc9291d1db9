"""The LLM layer: one small interface (``LLM``) for every role, over any OpenAI-compatible endpoint.

Why these layers (as in pydantic-ai: provider, profile and output mode apart): ``base`` is the interface
and its types; ``capability`` is what one endpoint and model can do (``EndpointProfile``: the request
forms it takes, its window, its prompt cache), learnt from the server (``refusals`` read its errors,
``server_facts`` what it says about itself), moved by ``negotiator`` and kept in the home by
``profile_store``; ``output`` builds each mode's request and reads the answer back, repaired where it can
be; ``transport`` fixes each request's words, sends it (early, when it can) and reads the reply
(``OpenAICompatLLM``).  The test doubles (the scripted server, ``ScriptedLLM``, transcript replay) are
``artoo.tasks.llm.testing``, which runtime code never imports.  Nothing is imported until asked for:
``artoo run`` sends R1 before ``openai`` is loaded.
"""

from artoo import exports

__all__, __getattr__ = exports(__name__, {
    "base": ("LLM", "ROLE_TIER", "TOOLS_SCHEMA", "CallRecord", "Endpoint", "ToolCallRequest", "ToolTurn",
             "cost_report", "tier_of"),
    "capability": ("EndpointProfile",),
    "transport.client": ("OpenAICompatLLM",),
    "transport.requests": ("RequestBuilder",),
})
