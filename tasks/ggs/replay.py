"""What-if replay of the GGS: the recorded rounds' verdicts fed again under other hyperparameters.

Why it can be exact: the controller is pure.  Its only inputs are the round's R4b message
(OutcomeSummary or ReplanRequest), the elapsed milliseconds and its parameters, and the
decision log records exactly those for every round (``kind: ggs``).  Replaying with the
recorded parameters therefore gives the recorded directives, loss and ∇L round by round;
changing a parameter shows where the run would have gone instead.

What replay cannot know: a different directive would have produced a different plan and so
different verdicts.  So a replayed round after the first divergence still uses the recorded
verdicts (the rows say ``differs``), a replayed run that stops earlier marks the rounds that
would not have run, and one that would go on past the recorded end says it would need a new
plan (that round was never run, so nothing can be fed for it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pydantic import ValidationError

from artoo.config.contracts import OutcomeSummary, ReplanRequest
from artoo.config.errors import ConfigurationError
from artoo.config.settings import GGSParams
from artoo.tasks.ggs.controller import GGSController

TERMINAL = ("accept", "success", "abandon")


@dataclass
class ReplayRow:
    """One round, recorded and replayed side by side."""

    round: int
    recorded: str
    replayed: str
    recorded_L: float
    replayed_L: float | None
    replayed_D: float | None
    replayed_P: float | None
    replayed_Omega: float | None
    replayed_grad_l: float | None
    note: str


@dataclass
class Replay:
    """The whole what-if: parameters used, the rows, and how the replayed run ends."""

    task_id: str
    params: dict[str, Any]
    changed: dict[str, Any]
    rows: list[ReplayRow]
    outcome: str

    @property
    def identical(self) -> bool:
        """True when every replayed directive equals the recorded one."""
        return all(r.recorded == r.replayed for r in self.rows)

    def as_dict(self) -> dict[str, Any]:
        """JSON data for ``artoo replay --json``."""
        return {"task_id": self.task_id, "params": self.params, "changed": self.changed,
                "identical": self.identical, "outcome": self.outcome, "rows": [asdict(r) for r in self.rows]}


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    """``["ggs.alpha=0.4", "ggs.max_replans=5"]`` → ``{"alpha": 0.4, "max_replans": 5}`` (validated names)."""
    changes: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        name = key.strip().removeprefix("ggs.")
        if not sep or not value.strip():
            raise ConfigurationError(f"--set needs KEY=VALUE, got {pair!r}")
        if name not in GGSParams.model_fields:
            raise ConfigurationError(f"--set {key.strip()!r}: replay changes GGS parameters only; known: "
                                     + ", ".join(f"ggs.{n}" for n in GGSParams.model_fields))
        changes[name] = value.strip()
    return changes


def params_with(recorded: dict[str, Any], changes: dict[str, Any]) -> GGSParams:
    """The recorded parameters with ``changes`` applied and validated."""
    try:
        return GGSParams.model_validate({**recorded, **changes})
    except ValidationError as exc:
        raise ConfigurationError(f"invalid --set value: {exc.errors()[0].get('msg')} "
                                 f"({', '.join(f'ggs.{k}={v}' for k, v in changes.items())})") from None


def ggs_steps(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``ggs`` records of one run, in round order; ConfigurationError when there are none."""
    steps = sorted((r for r in records if r.get("kind") == "ggs"), key=lambda r: r.get("round", 0))
    if not steps:
        raise ConfigurationError("this run's decision log has no GGS decision to replay (it ended before "
                                 "its first round was judged, or it was recorded with the log off)")
    return steps


def replay(steps: list[dict[str, Any]], changes: dict[str, Any] | None = None) -> Replay:
    """Feed the recorded GGS inputs to a fresh controller under the recorded parameters plus ``changes``."""
    changes = changes or {}
    first = steps[0]
    params = params_with(first["params"], changes)
    controller = GGSController(first["task_id"], first.get("intent", ""), params)
    rows: list[ReplayRow] = []
    stopped_at: int | None = None
    for step in steps:
        recorded = step["state"]
        recorded_l = float(step["loss"]["L"])
        if controller.finished:
            rows.append(ReplayRow(step["round"], recorded, "—", recorded_l, None, None, None, None, None,
                                  f"not run: the replay stopped at round {stopped_at}"))
            continue
        decision = controller.evaluate(_message(step["message"]), float(step["elapsed_ms"]),
                                       float(step.get("paused_ms", 0.0)),  # older logs: no Law-1 waits
                                       float(step.get("spent", 0.0)))  # nor the calls spent
        if decision.final is not None:
            stopped_at = step["round"]
        rows.append(ReplayRow(step["round"], recorded, decision.state, recorded_l, decision.loss.L, decision.loss.D,
                              decision.loss.P, decision.loss.Omega, decision.grad_l,
                              _note(recorded, decision.state, step is steps[-1])))
    last = rows[-1]
    if stopped_at is not None:
        outcome = f"would stop at round {stopped_at} with {next(r.replayed for r in rows if r.round == stopped_at)}"
    else:
        outcome = f"would need a new plan: round {last.round + 1} under {last.replayed} (never run)"
    return Replay(first["task_id"], params.model_dump(mode="json"), changes_typed(params, changes), rows, outcome)


def changes_typed(params: GGSParams, changes: dict[str, Any]) -> dict[str, Any]:
    """The changed parameters with their validated values."""
    return {name: getattr(params, name) for name in changes}


def _note(recorded: str, replayed: str, last: bool) -> str:
    if replayed == recorded:
        return "same"
    if replayed in TERMINAL and recorded not in TERMINAL:
        return f"replay stops here ({replayed})"
    if last and replayed not in TERMINAL:
        return f"needs a new plan ({replayed}): the recorded run ended here"
    return "differs"


def _message(data: dict[str, Any]) -> OutcomeSummary | ReplanRequest:
    """The recorded R4b message, rebuilt as the controller received it."""
    model = ReplanRequest if data.get("kind") == "replan_request" else OutcomeSummary
    return model.model_validate(data)
