"""The spec's roles, one module each, and what their Prefect tasks need: a role never imports another.

``perceiver`` (R1: the request → a TaskSpec), ``planner`` (R2: the plan, under the GGS's directive),
``executor`` (R3: a subtask through the tools), ``agent_validator`` (R4a: one subtask's criteria),
``meta_validator`` (R4b: the task's verdict, the kept results); ``prompting`` (what their prompts
share), ``grounding`` (Law 0 by code: the validators' passes that rest on a claim alone), ``session``
(R1's context: the user's last requests), ``task`` (each role as a Prefect task that publishes what the
role sends on the bus) and ``runtime`` (the run's live objects those tasks look up by id, as its fixed
dependencies and its record: Prefect records parameters, so live objects never travel as one).
"""

from artoo import exports

__all__, __getattr__ = exports(__name__, {
    "perceiver": ("perceive",),
    "planner": ("plan",),
    "executor": ("execute",),
    "agent_validator": ("judge",),
    "meta_validator": ("decide", "judge_task"),
    "grounding": ("why_ungrounded", "overrule"),
    "session": ("load_history", "append_history", "history_for"),
    "runtime": ("Runtime", "RunDeps", "RunRecord", "register", "get_runtime", "with_bus", "drop"),
    "task": ("perceive_task", "plan_task", "execute_task", "validate_task", "meta_validate_task",
        "failure_report_task"),
})
