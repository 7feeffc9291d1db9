"""Replay of the GGS, pure: recorded steps (as the decision log keeps them) fed again under other parameters."""

from __future__ import annotations

import pytest

from artoo.config.errors import ConfigurationError
from artoo.config.settings import GGSParams
from artoo.tasks.ggs.controller import GGSController
from artoo.tasks.ggs.replay import parse_overrides, replay
from tests.test_ggs_controller import INTENT, TASK, failing, rr

PLATEAU = rr([failing(1, 1, "logical")])  # D=1, P=1, flat: break_symmetry until the budget is spent


def record(params: GGSParams, messages, elapsed_ms: float = 1000.0) -> list[dict]:
    """What the GGS task writes per round: the controller's inputs and its decision."""
    controller, steps = GGSController(TASK, INTENT, params), []
    for n, message in enumerate(messages, 1):
        decision = controller.evaluate(message, elapsed_ms * n)
        steps.append({"task_id": TASK, "intent": INTENT, "round": n, "elapsed_ms": elapsed_ms * n,
                      "paused_ms": 0.0, "params": params.model_dump(mode="json"),
                      "message": message.model_dump(mode="json"), "state": decision.state,
                      "loss": decision.loss.model_dump(mode="json")})
        if decision.final is not None:
            break
    return steps


@pytest.mark.parametrize("params", [GGSParams(), GGSParams(max_replans=1), GGSParams(alpha=0.9, epsilon=0.01)])
def test_replay_with_the_recorded_settings_reproduces_every_round(params):
    steps = record(params, [PLATEAU] * 6)
    result = replay(steps)
    assert result.identical and [r.replayed for r in result.rows] == [s["state"] for s in steps]
    assert [r.replayed_L for r in result.rows] == [s["loss"]["L"] for s in steps]


@pytest.mark.parametrize(("changes", "replayed", "outcome"), [
    ({"max_replans": "0"}, ["abandon", "—", "—"], "would stop at round 1 with abandon"),
    ({"max_replans": "5"}, ["break_symmetry"] * 3, "would need a new plan: round 4 under break_symmetry"),
    ({"theta": "0.0001"}, ["abandon", "—", "—"], "would stop at round 1 with abandon"),
])
def test_replay_under_other_settings_marks_stops_and_new_plans(changes, replayed, outcome):
    steps = record(GGSParams(max_replans=2), [PLATEAU] * 3)
    assert [s["state"] for s in steps] == ["break_symmetry", "break_symmetry", "abandon"]
    result = replay(steps, changes)
    assert [r.replayed for r in result.rows] == replayed
    assert result.outcome.startswith(outcome) and not result.identical
    notes = [r.note for r in result.rows]
    if replayed[-1] == "—":
        assert notes[0] == "replay stops here (abandon)" and notes[1].startswith("not run")
    else:
        assert notes[-1].startswith("needs a new plan")


@pytest.mark.parametrize("bad", [["ggs.nope=1"], ["ggs.alpha"], ["ggs.alpha="]])
def test_bad_overrides_are_configuration_errors(bad):
    with pytest.raises(ConfigurationError):
        parse_overrides(bad)


def test_a_value_of_the_wrong_type_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="ggs.max_replans"):
        replay(record(GGSParams(), [PLATEAU]), {"max_replans": "many"})
