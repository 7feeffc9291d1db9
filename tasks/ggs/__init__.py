"""The Goal Gradient Solver (R7): the loss maths, the controller that turns a round into a directive,
and its Prefect task.

``maths`` (pure: D, P, Ω, the loss and its gradient), ``controller`` (a round's outcomes → the
PlanDirective), ``task`` (the ``R7 · GGS`` Prefect task and its artifacts), ``picture`` (the loss
picture), ``replay`` (a run's trajectory under other hyperparameters: ``artoo replay``).
"""

from artoo import exports

__all__, __getattr__ = exports(__name__, {
    "maths": ("loss", "distance", "urgency", "macro_state"),
    "controller": ("GGSController", "GGSDecision"),
    "task": ("ggs_task",),
    "picture": ("trajectory_svg",),
})
