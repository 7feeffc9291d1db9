"""The observable bus: the one publish point every inter-role message passes through.

``events`` publishes each message as a Prefect event ``artoo.<kind>`` on ``artoo.task.<task_id>``,
with its from/to roles, a per-task sequence number and the publishing run (what the Auditor
reads), and feeds the process-local taps that show a run's live progress.
"""

from artoo import exports

__all__, __getattr__ = exports(__name__, {
    "events": ("Bus", "add_tap", "remove_tap", "event_name", "task_resource", "EVENT_PREFIX"),
})
