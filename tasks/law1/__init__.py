"""Law 1: parse a command, judge it by effect family, and decide whether it needs a person's yes.

``parse`` (the bash grammar), ``core`` (what every rule shares: targets, system paths, options),
``rules`` and ``rules_*`` (one module per effect family: files, system, network, daemons, code,
exfiltration), ``variables``, ``changes`` (what a copy-on-write run changed), and ``judge`` (the
gate's policy: the verdict on a command or a write).  The gate's pause is ``artoo.flows.law1``.
"""

from artoo import exports

__all__, __getattr__ = exports(__name__, {
    "judge": ("PolicyVerdict", "judge_command", "judge_write", "judge_unobservable"),
    "parse": ("parse", "ParseError"),
    "changes": ("Change",),
})
