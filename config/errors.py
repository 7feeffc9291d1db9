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
