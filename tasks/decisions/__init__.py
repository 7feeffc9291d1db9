"""The decision log: every LLM call, tool call, verdict and GGS decision of a run, kept to explain it.

``log`` appends one JSONL file per run under ``ARTOO_HOME/decisions/`` (read by ``artoo log``,
``artoo replay``, the REPL's ``/log`` and ``artoo eval``); ``redact`` removes secrets from every
record before it reaches the disk.
"""

from artoo import exports

__all__, __getattr__ = exports(__name__, {
    "log": ("DecisionLog", "in_scope", "load_run", "find_run", "read_records", "index_entries", "prune"),
    "redact": ("Redactor", "MASK"),
})
