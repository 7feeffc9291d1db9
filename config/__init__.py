"""The bottom layer: what every layer above shares, and nothing that needs another layer.

``settings`` (the effective settings; shipped defaults in ``artoo.toml``), the spec's messages
(``contracts``, ``audit_contracts``), the LLM answer
schemas (``protocol``), the exception hierarchy (``errors``) and ``compat``: every Prefect API
Prefect does not document, in one place (reached as ``artoo.config.compat`` on purpose, never
re-exported here).
"""

from artoo import exports

__all__, __getattr__ = exports(__name__, {
    "settings": ("Settings", "load_settings"),
    "errors": ("ArtooError", "ConfigurationError", "EnvironmentalFailure", "LLMOutputError", "PlanRejected",
        "RunFailure"),
    "contracts": ("TaskSpec", "SubTask", "DispatchManifest", "ToolCall", "ExecutionResult", "CriterionVerdict",
        "SubTaskOutcome", "CorrectionSignal", "ReplanRequest", "PlanDirective", "BlockedTarget", "OutcomeSummary",
        "FinalResult", "Megram", "Potentials", "SOPRecord"),
    "audit_contracts": ("AuditEvent", "AuditReport"),
    "protocol": ("PlanAnswer", "ExecutionAnswer", "VerdictAnswer", "TaskVerdict", "SCHEMAS"),
})
