"""Settings: defaults from the spec, the override order, tier fallback and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from artoo.config.errors import ConfigurationError
from artoo.config.settings import load_settings

SPEC_DEFAULTS = [
    ("ggs", "alpha", 0.6), ("ggs", "beta", 0.3), ("ggs", "lam", 0.4), ("ggs", "w1", 0.6), ("ggs", "w2", 0.4),
    ("ggs", "epsilon", 0.1), ("ggs", "delta", 0.3), ("ggs", "rho", 0.5), ("ggs", "theta", 0.8),
    ("ggs", "time_budget_ms", 300_000), ("ggs", "max_replans", 3), ("ggs", "max_retries", 2),
    ("ggs", "law2_threshold", 2), ("memory", "attention_threshold", 0.5), ("memory", "decision_threshold", 0.2),
    ("memory", "gc_threshold", 0.1), ("memory", "promote_attention", 5.0), ("memory", "promote_decision", 3.0),
    ("memory", "dreamer_period_s", 300), ("tools", "head_tail_limit", 4000),
]


@pytest.mark.parametrize("group, name, value", SPEC_DEFAULTS, ids=[f"{g}.{n}" for g, n, _ in SPEC_DEFAULTS])
def test_spec_defaults(artoo_env, group, name, value):
    assert getattr(getattr(load_settings(), group), name) == value


def test_every_field_has_a_description(artoo_env):
    settings = load_settings()
    for model in (settings, settings.ggs, settings.memory, settings.tools, settings.llm):
        missing = [n for n, f in type(model).model_fields.items() if not f.description]
        assert not missing, f"{type(model).__name__} fields without description: {missing}"


def test_override_order_env_beats_user_toml_beats_shipped(artoo_env, monkeypatch):
    home = Path(artoo_env / "home")
    home.mkdir()
    (home / "artoo.toml").write_text("[ggs]\nalpha = 0.5\nbeta = 0.2\n")
    monkeypatch.setenv("ARTOO_GGS__ALPHA", "0.45")
    settings = load_settings()
    assert (settings.ggs.alpha, settings.ggs.beta, settings.ggs.lam) == (0.45, 0.2, 0.4)


@pytest.mark.parametrize("env, brain, tool", [
    ({"OPENAI_BASE_URL": "http://o/v1", "OPENAI_MODEL": "m"}, ("http://o/v1", "m"), ("http://o/v1", "m")),
    ({"OPENAI_BASE_URL": "http://o/v1", "OPENAI_MODEL": "m", "BRAIN_MODEL": "big"},
     ("http://o/v1", "big"), ("http://o/v1", "m")),
    ({"BRAIN_BASE_URL": "http://b/v1", "BRAIN_MODEL": "b", "TOOL_BASE_URL": "http://t/v1", "TOOL_MODEL": "t"},
     ("http://b/v1", "b"), ("http://t/v1", "t")),
])
def test_tiers_fall_back_to_openai(artoo_env, monkeypatch, env, brain, tool):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = load_settings()
    assert (settings.tier("brain").base_url, settings.tier("brain").model) == brain
    assert (settings.tier("tool").base_url, settings.tier("tool").model) == tool


def test_missing_endpoint_is_a_configuration_error_naming_the_variables(artoo_env):
    with pytest.raises(ConfigurationError, match="OPENAI_BASE_URL"):
        load_settings().require_tiers()


@pytest.mark.parametrize("setup", ["bad-value", "missing-file", "broken-toml"])
def test_bad_settings_are_one_clear_configuration_error(artoo_env, monkeypatch, setup):
    if setup == "bad-value":
        monkeypatch.setenv("ARTOO_GGS__ALPHA", "not-a-number")
    elif setup == "missing-file":
        monkeypatch.setenv("ARTOO_CONFIG", str(artoo_env / "nope.toml"))
    else:
        broken = artoo_env / "broken.toml"
        broken.write_text("[ggs\nalpha = ")
        monkeypatch.setenv("ARTOO_CONFIG", str(broken))
    with pytest.raises(ConfigurationError):
        load_settings()


def test_a_home_that_is_a_file_is_a_configuration_error(artoo_env, monkeypatch):
    blocker = artoo_env / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("ARTOO_HOME", str(blocker))
    with pytest.raises(ConfigurationError, match="ARTOO_HOME"):
        _ = load_settings().home_dir


TIMEOUTS = [  # (the user's artoo.toml, environment, expected (brain, tool) request timeouts)
    ("", {}, (180.0, 150.0)),  # nothing set: sized for a local CPU model
    ("llm_timeout_s = 45\n", {}, (45.0, 45.0)),  # an existing user's single timeout still decides both
    ("llm_timeout_s = 45\n[llm]\nbrain_timeout_s = 300\n", {}, (300.0, 45.0)),
    ("[llm]\ntool_timeout_s = 90\n", {}, (180.0, 90.0)),
    ("llm_timeout_s = 45\n", {"ARTOO_LLM__BRAIN_TIMEOUT_S": "240"}, (240.0, 45.0)),
    ("", {"ARTOO_LLM_TIMEOUT_S": "30"}, (30.0, 30.0)),
]


@pytest.mark.parametrize("toml, env, expected", TIMEOUTS)
def test_each_tier_has_its_own_timeout_falling_back_to_llm_timeout_s(artoo_env, monkeypatch, toml, env, expected):
    monkeypatch.delenv("ARTOO_LLM_TIMEOUT_S")  # the fixture's; each row sets its own
    home = Path(artoo_env / "home")
    home.mkdir()
    (home / "artoo.toml").write_text(toml)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = load_settings()
    assert (settings.tier("brain").timeout_s, settings.tier("tool").timeout_s) == expected
    assert (settings.masked()["resolved_brain_tier"]["timeout_s"],
            settings.masked()["resolved_tool_tier"]["timeout_s"]) == expected  # what `artoo config` shows


@pytest.mark.parametrize("brain, retries, bound", [
    (180.0, 1, 4 * 180 + 30),  # answer and repair, each retried once
    (3.0, 0, 2 * 3 + 30),
    (60.0, 2, 6 * 60 + 30),
])
def test_a_whole_call_is_bounded_by_every_request_it_may_send_at_the_tier_timeout(artoo_env, brain, retries, bound):
    settings = load_settings(llm={"brain_timeout_s": brain}, llm_max_retries=retries)
    assert settings.call_bound_s("brain") == bound
