"""The spec's roles and the mechanisms they use, one package each; pure logic, Prefect only at named edges.

``roles`` (R1 perceiver, R2 planner, R3 executor, R4a/R4b validators, their Prefect tasks), ``ggs``
(R7, the Goal Gradient Solver), ``plan`` (R2's plan validator and the dispatcher), ``blame``
(failure attribution), ``law1`` (Law 1's judge), ``tools`` (R3's tools and the Law-1 gate in front
of them), ``llm`` (the LLM layer), ``bus`` (the observable bus), ``decisions`` (the decision log)
and ``audit`` (R6, the Auditor's core).  Importing this package imports none of them.
"""

__all__ = ["audit", "blame", "bus", "decisions", "ggs", "law1", "llm", "plan", "roles", "tools"]
