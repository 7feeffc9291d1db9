"""artoo's benchmarks: orchestration overhead, LLM-call economy, parallelism, flow-run cost, memory.

Run them with ``artoo bench`` (or ``python -m artoo.bench``); bench/README.md explains the output.
``harness`` runs the sections and holds each to its target; each ``*_bench`` module is one section
and runs alone with ``python -m artoo.bench.<name>``.
"""

from artoo import exports

__all__, __getattr__ = exports(__name__, {
    "harness": ("main",),
})
