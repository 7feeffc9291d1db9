"""The plan: what code, not the model, guarantees about R2's plan before anything runs.

``rules`` is R2's plan validator (the MUST NOT set, the structural rules, the size cap) and the
dispatcher that turns a plan into SubTasks with ids made by code and ordered groups; ``inputs`` is what
bounds one round's plan before R2 is asked (memory's calibration, the MUST NOT set) and R2's request
built from it; ``ahead`` is who works round 1's out when ``artoo run`` reads ahead of its flow.  No Prefect.
"""

from artoo import exports

__all__, __getattr__ = exports(__name__, {
    "rules": ("validate_plan", "normalise_sequences", "drop_blocked_tools", "place_task_criteria", "with_request",
        "cap_plan",
        "dispatch", "group_context", "MAX_SUBTASKS"),
    "inputs": ("RoundInputs", "round_inputs", "shown", "plan_messages"),
    "ahead": ("expect", "claim", "settle", "take", "forget"),
})
