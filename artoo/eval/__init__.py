"""``artoo eval``: a task suite through the whole loop, with an honest score.

``suite`` (the tasks, their confined trees and gold runs, the score), ``harness`` (runs a suite
cold or in sequence, as the ``artoo-eval`` flow), ``brain`` (the simulated brain), ``answerer``
(the Law-1 answerer a run asks as its policy), ``failures`` (why an unsolved task failed),
``sequence``, ``report`` and ``png`` (the totals, the markdown and the chart).

The everyday suite (``artoo eval everyday``): ``everyday`` (a task, its folder, confined runs, the judgement),
``checks`` (our end-state checks), ``everyday_suite`` (the tasks), ``peers`` (the two plain peers),
``everyday_run`` (the flow) and ``everyday_report``.
"""

from artoo import exports

__all__, __getattr__ = exports(__name__, {
    "harness": ("EvalOptions", "run_eval"),
    "suite": ("Suite", "Task", "load_suite", "score"),
    "brain": ("SimulatedBrain",),
    "answerer": ("answer",),
    "failures": ("failure_kind",),
    "everyday_run": ("EverydayOptions", "run_everyday"),
})
