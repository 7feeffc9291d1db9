"""What a tool call returns, and what the Law-1 gate is asked."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from artoo.config.contracts import BlockedTarget
    from artoo.tasks.tools.sandbox import Limits

FailureClass = Literal["logical", "environmental"]


class ToolResult(BaseModel):
    """The outcome of one tool call, as the executor and R4a see it."""

    ok: bool = Field(description="True when the tool did what was asked.")
    output: str = Field(description="What the model sees: headTail of the tool's output, or the failure.")
    failure_class: FailureClass | None = Field(None, description="logical: wrong approach; environmental: "
                                               "the world (or a guard) blocked it.")
    evidence: str = Field(description="`name: input → firstN(output, 200)`, recorded by code for R4a.")
    input: str = Field("", description="The call's primary argument as the model gave it.")
    targets: list[str] = Field(default_factory=list, description="The call's normalised targets "
                               "(artoo.tasks.blame.failure.call_targets): what a failure of it is attributed to.")
    denied: bool = Field(False, description="True when the Law-1 gate refused the call.")


class PendingAction(BaseModel):
    """An irreversible action waiting for the user's explicit approval (Law 1)."""

    tool: str = Field(description="The tool that wants to act: shell or write_file.")
    command: str = Field(description="Exactly what would run.")
    targets: list[str] = Field(default_factory=list, description="Paths, hosts or items at risk.")
    reason: str = Field(description="Why the policy judged it irreversible.")
    changes: list[str] = Field(default_factory=list, description="The exact change set the command made on "
                               "its copy-on-write view, one line per path; approving commits exactly this.")


Gate = Callable[[PendingAction], Awaitable[bool]]
"""Asks the user; True only on an explicit approval."""


class ToolError(Exception):
    """A tool-level failure, turned into ``ToolResult(ok=False)`` by the ToolBox."""

    def __init__(self, message: str, failure_class: FailureClass = "logical") -> None:
        super().__init__(message)
        self.failure_class: FailureClass = failure_class
        self.denied = False
        """Set when the Law-1 gate refused the action: a constraint, not a failed target."""


@dataclass(frozen=True)
class Blocks:
    """What a toolbox refuses for its subtask: the GGS's blocked tools and targets, memory's pairs."""

    tools: frozenset[str] = frozenset()
    """Tools not offered and refused outright."""
    targets: tuple[BlockedTarget | str, ...] = ()
    """Targets refused for the access that failed (a bare string: every access)."""
    pairs: frozenset[tuple[str, ...]] = frozenset()
    """Memory's (tool, target[, access]) pairs: that tool on that target, that way, only."""


@dataclass(frozen=True)
class Confinement:
    """Where a toolbox's tools may reach and how its shell commands are confined; each default is the usual one."""

    read_roots: tuple[Path, ...] = ()
    """Where read_file and glob may look; () means the workspace and the home directory."""
    write_roots: tuple[Path, ...] = ()
    """Where write_file may create files; () means the workspace."""
    network: bool = False
    """Shell commands may use the network from the first call (a search turns it on later anyway)."""
    sandbox_mode: str | None = None
    """auto, require or off; None means the settings' ``tools.sandbox``."""
    limits: Limits | None = None
    """The shell's resource limits; None means the settings'."""
    search_url: str | None = None
    """The search endpoint; None means DuckDuckGo's HTML page."""
