"""artoo's benchmarks: orchestration overhead, LLM-call economy, parallelism, flow-run cost, memory.

Run them with ``artoo bench`` (or ``python -m artoo.bench``); bench/README.md explains the output.
"""
