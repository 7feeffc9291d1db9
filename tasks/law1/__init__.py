"""Law 1: judge a command by effect family, and decide whether it needs a person's yes.

``core`` (what every rule shares: targets, system paths, options), ``rules`` and ``rules_*`` (one
module per effect family: files, system, network, daemons, code, exfiltration), ``variables``,
``changes`` (what a copy-on-write run changed), and ``judge`` (the gate's policy: the verdict on a
command or a write).  Commands are read by the shell grammar, ``artoo.tasks.shell``; the gate's
pause is ``artoo.flows.law1``.
"""

from artoo import exports

__all__, __getattr__ = exports(__name__, {
    "judge": ("PolicyVerdict", "judge_command", "judge_write", "judge_unobservable"),
    "changes": ("Change",),
})
