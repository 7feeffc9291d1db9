"""Failure blame: what failed, where, and which access it refused, read from a round's outcomes.

One model of failure that the fast loop, the GGS, the plan rules and the toolbox all ask, so a
target is blamed one way everywhere: ``failure`` (which calls and targets a failed subtask blames,
which tools a logical failure blames), ``error_lines`` (what a failed command's error lines say
about its paths), ``traversal`` (what a walking command could not read is noise, not a failed
target) and ``access`` (read, write, execute or delete: only the access that failed is refused).
Pure: no I/O, no clock.
"""

from artoo import exports

__all__, __getattr__ = exports(__name__, {
    "failure": ("call_targets", "attributed_calls", "blamed_targets", "blamed_tools", "outcome_kind", "text_targets"),
    "error_lines": ("ErrorPath", "error_paths", "missing_package"),
    "traversal": ("Walk", "walks", "split_noise", "walk_notes"),
    "access": ("call_accesses", "attributed_blocks", "refusal", "refused_access"),
})
