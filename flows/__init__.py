"""The Prefect flows: where the pure parts meet Prefect's runs, pauses, events and schedules.

``task_flow`` (``artoo-task``: the medium loop, one run per request), ``round`` (one round's
subflow), ``fast_loop`` (one subtask's execute/validate attempts), ``law1`` (the gate: a person's
yes, asked at the console or as a paused run), ``auditor`` (R6, scheduled), ``dreamer`` (the
Dreamer, scheduled) and ``deployments`` (the three deployments ``artoo serve`` serves).  Their
files are the deployments' entrypoints (``prefect.yaml``), so they keep their paths.  The
Auditor's and the Dreamer's flows are ``auditor.auditor`` and ``dreamer.dreamer``: a package
attribute cannot name both a module and its flow.
"""

from artoo import exports

__all__, __getattr__ = exports(__name__, {
    "task_flow": ("artoo_task",),
    "round": ("round_flow",),
    "fast_loop": ("subtask_flow",),
    "law1": ("make_gate",),
    "deployments": ("runner_deployments", "serve_all"),
})
