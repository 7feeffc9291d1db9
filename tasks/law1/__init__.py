"""Law 1: whether an action needs a person's yes, judged from a command's text or from what it changed.

``judge`` (the verdict), ``rules`` (the walk over a command line), ``network`` and ``daemons`` (what no
overlay can observe), ``readonly`` (what runs unasked without an overlay), ``core`` (what they share)
and ``changes`` (the ruling on a change set).  Grammar: ``artoo.tasks.shell``; the pause: ``artoo.flows.law1``.
"""

from artoo import exports

__all__, __getattr__ = exports(__name__, {
    "judge": ("PolicyVerdict", "judge_command", "judge_write", "judge_unobservable"),
    "changes": ("Change",),
})
