"""Output handling: the request each output mode makes, and reading the answer back, repaired where it can be.

Why a package: a structured answer or a tool turn is asked for in one of several modes (the endpoint's
profile says which), and whatever the mode, the model's text is read the same way: ``modes`` builds each
mode's request (strict schemas, the JSON-in-content tool protocol), ``extract`` finds the JSON object and
the tool calls a model meant in what it wrote, and ``repair`` fixes what cannot change its meaning before
the one re-ask.  All pure: the transport sends and receives.
"""

from artoo import exports

__all__, __getattr__ = exports(__name__, {
    "modes": ("structured_request", "tool_request", "strict_json_schema", "strict_schema"),
    "extract": ("content_tool_calls", "first_message"),
    "repair": ("InvalidAnswer", "Repaired", "repair_answer", "repair_messages"),
})
