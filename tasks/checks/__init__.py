"""Checks that code runs: a criterion's verdict decided by a command's outcome, not by a model's word.

A small model passes what it is told, so a criterion a command can decide is decided by one
(``run``): a read-only test on the folder as it is, or a command that does the work, run on a throwaway
copy of the folder as it was before and compared with what the executor changed (``tree``).  ``decide``
turns those outcomes into verdicts and says which criteria are left for a model to judge.
"""

from artoo import exports

__all__, __getattr__ = exports(__name__, {
    "tree": ("PathChange", "Comparison", "compare", "changes", "state"),
    "run": ("Confined", "Ran", "run_confined", "run_reference"),
    "decide": ("CheckOutcome", "from_predicate", "from_reference", "verdict_of"),
    "contradict": ("claims", "contradictions"),
    "evaluate": ("Snapshot", "check_criteria", "confined_from", "existed_before", "take_snapshot"),
})
