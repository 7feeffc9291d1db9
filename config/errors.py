"""One exception hierarchy for artoo.

Two kinds of trouble reach a user and they need different answers: a *configuration*
mistake (missing endpoint, bad API key, malformed settings file) is fixed by the person
and maps to exit code 2; a *run failure* happens while doing the work (endpoint down,
model answered garbage) and is data for the control loops.  A validator's rejection is
neither: it is a verdict, carried in the contracts, never raised.
"""

from __future__ import annotations


class ArtooError(Exception):
    """Base of every error artoo raises on purpose."""


class ConfigurationError(ArtooError):
    """The person must change a setting; retrying cannot help (exit code 2)."""


class RunFailure(ArtooError):
    """Something failed while doing the work; the loops classify and report it."""

    failure_class: str = "logical"


class EnvironmentalFailure(RunFailure):
    """Timeout, connection error, 5xx, offline search: the world blocked a sound approach."""

    failure_class = "environmental"


class LLMOutputError(RunFailure):
    """The model's answer stayed invalid after the one repair attempt."""

    failure_class = "logical"


class PlanRejected(RunFailure):
    """A plan broke the MUST NOT set or the plan rules twice in a row."""

    failure_class = "logical"


class TimeBudgetSpent(RunFailure):
    """The task's time (``ggs.time_budget_ms``, the person's Law-1 waits aside) ran out: no further request is sent,
    and one under way is cut off, so a task ends within its budget."""

    failure_class = "environmental"

    def __init__(self, budget_s: float, role: str = "") -> None:
        self.budget_s, self.role = budget_s, role
        refused = f"; {role}'s request was not sent" if role else ""
        super().__init__(f"the time budget of {budget_s:g} s is spent{refused} (ggs.time_budget_ms sets it)")

    def __reduce__(self) -> tuple:
        """Rebuilt from its fields, so it survives a pickle."""
        return type(self), (self.budget_s, self.role)


class CallBudgetSpent(RunFailure):
    """The task's LLM calls reached ``ggs.max_calls``: the next request is not sent, so a task cannot call on forever.

    Environmental: the approach may be sound, the budget the person set is what ran out (the GGS abandons on it).
    """

    failure_class = "environmental"

    def __init__(self, max_calls: int, spent: float, role: str = "") -> None:
        self.max_calls, self.spent, self.role = max_calls, spent, role
        refused = f"; {role}'s request was not sent" if role else ""
        super().__init__(f"the call budget of {max_calls} calls is spent ({spent:g} used{refused}; "
                         "ggs.max_calls sets it)")

    def __reduce__(self) -> tuple:
        """Rebuilt from its fields, not its message, so it survives a pickle (a Prefect state may hold it)."""
        return type(self), (self.max_calls, self.spent, self.role)
