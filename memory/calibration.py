"""R2's Memory Calibration Protocol (spec R2 / paper §4.5): memory → plan constraints, no LLM.

``calibrate`` is pure.  It maps the intent pair's action (Exploit → SHOULD PREFER,
Avoid → MUST NOT, Caution → CAUTION, Ignore → omitted) and quotes, from the intent's
newest Megrams, what was tried and what happened (a line that only says "an approach
failed" cannot steer a plan away from it); adds the C-level SOPs of the intent and of the
tool pairs (σ > 0 prefer, else must not) and what ``tool:*``/``path:*`` Megrams say about
tools and targets, keeps the strongest ``max_entries`` memory lines (MUST NOT first, in the spec's
priority order), and merges the MUST NOT set with the GGS's blocked tools and targets.

A success code verified (its episode has a ``verified:`` line: every verifiable criterion was met by a check)
is memory's strongest evidence, so its method is offered after one success, not after the potentials or the
three successes an SOP needs, and to any later request of the same *kind* (artoo.memory.kinds), not only to
requests whose first three words match: a SHOULD PREFER line quoting the request it worked for, the command
that passed and the checks it passed (``verified_entries``, the best ``VERIFIED_LINES``).

Tool memory is read the way the GGS writes it: one Megram per (tool, target), and each
pair stands alone.  A pair that is Avoid restricts *that tool on that target*
(``must_not_pairs``: "MUST NOT use shell on /srv/x"); it never takes the tool away
everywhere, because the pairs of a tool come from other tasks on other paths, and summing
them would let one bad week on one directory ban ``shell`` for every task (paper §6.3:
the tool is not at fault when a path is blocked).  Only the GGS's ``blocked_tools`` of
*this* task become ``must_not_tools``.  A SHOULD PREFER line that names a tool, target
or pair under MUST NOT is dropped: MUST NOT wins.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import BaseModel, Field

from artoo.config.contracts import BlockedTarget, Megram, Potentials, SOPRecord
from artoo.memory.kinds import MATCH, same_kind
from artoo.memory.sops import SUCCESS_STATES, intent_of, last_round_calls, method_of, sop_method
from artoo.memory.tags import ENV_LOCAL, entity_target, episode_quote, episode_verified, intent_space, tool_space


class Calibration(BaseModel):
    """The planner's memory constraints; the two sets are what a plan validator checks mechanically."""

    prefer: list[str] = Field(default_factory=list, description="SHOULD PREFER lines.")
    must_not: list[str] = Field(default_factory=list, description="Merged MUST NOT lines (memory, then GGS).")
    caution: list[str] = Field(default_factory=list, description="CAUTION lines: confirm or sandbox.")
    verified: list[str] = Field(default_factory=list, description="The commands the kept SHOULD PREFER lines quote "
                                "as verified methods (what an eval compares the run's commands with).")
    must_not_tools: set[str] = Field(default_factory=set, description="Tools no subtask may use.")
    must_not_targets: set[str] = Field(
        default_factory=set, description="Inputs no tool may be given at all (blocked for reading or every access).")
    must_not_access: set[tuple[str, str]] = Field(
        default_factory=set, description="(target, access) blocked for one access only: write, execute or delete; "
        "the target may still be read, so a refused write does not stop a changed copy.")
    must_not_pairs: set[tuple[str, str, str]] = Field(
        default_factory=set, description="(tool, target, access) from memory: that tool must not use that target "
        "that way (``all``: any way).")
    space: str = Field("", description="The intent's memory space that was queried.")
    entity: str = Field(ENV_LOCAL, description="The entity that was queried.")
    potentials: Potentials | None = Field(None, description="QueryMK's answer for (space, entity).")
    sops: list[SOPRecord] = Field(default_factory=list, description="QueryC's answer for (space, entity).")
    tool_sops: list[SOPRecord] = Field(default_factory=list, description="The C-level SOPs of tool pairs read.")

    def prompt_block(self) -> str:
        """The calibration as planner-prompt text ('' when memory has nothing to say)."""
        sections = []
        for title, lines in (
            ("MUST NOT (hard constraints; a plan that breaks one is rejected)", self.must_not),
            ("SHOULD PREFER (worked before)", self.prefer),
            ("CAUTION (mixed record: add a confirmation step or sandbox it)", self.caution),
        ):
            if lines:
                sections.append(f"{title}:\n" + "\n".join(f"- {line}" for line in lines))
        if self.must_not_tools:
            sections.append(
                "Tools that must not appear in any subtask: " + ", ".join(sorted(self.must_not_tools))
            )
        if self.must_not_targets:
            targets = ", ".join(sorted(self.must_not_targets))
            sections.append(f"Targets that must not be reused as tool inputs: {targets}")
        if self.must_not_access:
            ways = ", ".join(f"{access} {target!r}" for target, access in sorted(self.must_not_access))
            sections.append(f"Accesses that failed (reading these targets is fine; write a new file instead): {ways}")
        if self.must_not_pairs:
            pairs = ", ".join(_pair_words(tool, target, access) for tool, target, access in sorted(self.must_not_pairs))
            sections.append(f"Tool/target pairs that must not be used (other tools and targets are fine): {pairs}")
        return "MEMORY CALIBRATION\n" + "\n\n".join(sections) if sections else ""


@dataclass(frozen=True)
class _Entry:
    section: str  # must_not | prefer | caution
    rank: int
    weight: float
    text: str
    tool: str | None = None
    target: str | None = None
    access: str = "all"
    command: str = ""
    """The command a verified method's line quotes."""


def _pair_words(tool: str, target: str, access: str) -> str:
    return f"{tool!r} on {target!r}" if access == "all" else f"{tool!r} to {access} {target!r}"


def _numbers(p: Potentials) -> str:
    return f"decision {p.decision:+.2f}, attention {p.attention:.2f}"


def _quote(episode: Megram | None) -> str:
    return f" — last time: {episode_quote(episode.content)}" if episode is not None else ""


def _intent_entry(intent: str, p: Potentials, episodes: list[Megram]) -> _Entry | None:
    """The intent's action, quoting the newest episode that explains it (what was tried, what happened)."""
    failed = next((e for e in episodes if e.sigma < 0), None)
    worked = next((e for e in episodes if e.sigma > 0), None)
    if p.action == "Exploit":
        text = f"the approach that worked before for tasks like {intent!r} ({_numbers(p)}){_quote(worked)}"
        return _Entry("prefer", 5, p.decision, text)
    if p.action == "Avoid":
        text = f"repeat the approach that failed before for tasks like {intent!r} ({_numbers(p)}){_quote(failed)}"
        return _Entry("must_not", 1, -p.decision, text)
    if p.action == "Caution":
        text = f"tasks like {intent!r} have a mixed record ({_numbers(p)}){_quote(failed)}{_quote(worked)}"
        return _Entry("caution", 7, p.attention, text)
    return None


def _sop_entry(sop: SOPRecord) -> _Entry:
    if sop.sigma > 0:
        return _Entry("prefer", 4, sop.sigma, sop.content)
    return _Entry("must_not", 0, abs(sop.sigma) or 1.0, sop.content)


def _tool_sop_entry(sop: SOPRecord) -> _Entry:
    """A rule distilled for one (tool, target) pair: prefer it there, or never use that tool there."""
    tool, (target, access) = _strip(sop.space, "tool:"), entity_target(sop.entity)
    if sop.sigma > 0:
        return _Entry("prefer", 4, sop.sigma, f"the tool {_pair_words(tool, target, access)}: {sop.content}",
                      tool, target, access)
    text = f"use the tool {_pair_words(tool, target, access)}: {sop.content}"
    return _Entry("must_not", 0, abs(sop.sigma) or 1.0, text, tool, target, access)


def _strip(value: str, prefix: str) -> str:
    return value[len(prefix) :] if value.startswith(prefix) else value


def _pair_entry(tool: str, target: str, access: str, p: Potentials) -> _Entry | None:
    """One (tool, target, access) pair's line; the pair alone decides, never the tool's other pairs."""
    words = _pair_words(tool, target, access)
    if p.action == "Avoid":
        text = f"use the tool {words} (failed before; {_numbers(p)})"
        return _Entry("must_not", 3, -p.decision, text, tool, target, access)
    if p.action == "Exploit":
        return _Entry("prefer", 6, p.decision, f"the tool {words} ({_numbers(p)})", tool, target, access)
    if p.action == "Caution":
        text = f"the tool {words} has a mixed or dead-end record ({_numbers(p)})"
        return _Entry("caution", 8, p.attention, text, tool, target, access)
    return None


def _tool_entries(tool_memory: list[tuple[str, str, Potentials]]) -> list[_Entry]:
    entries = []
    for space, entity, p in sorted(tool_memory, key=lambda row: (row[0], row[1])):
        if space.startswith("tool:"):
            entry = _pair_entry(_strip(space, "tool:"), *entity_target(entity), p)
            if entry is not None:
                entries.append(entry)
    return entries


VERIFIED_LINES = 2
"""At most this many verified methods reach a plan: the best matches, since prompt tokens count."""
QUOTED = 300
"""Characters of a verified command quoted (a long pipeline is cut: its shape is what carries over)."""


def _verified_command(content: str) -> str:
    """The calls of an episode's accepted (last) round: a shell call as its command, any other as ``tool(input)``."""
    shown = [given if tool == "shell" else f"{tool}({given})" for tool, given in last_round_calls(content)]
    text = " ; ".join(dict.fromkeys(" ".join(c.split()) for c in shown if c.strip()))
    return text if len(text) <= QUOTED else text[: QUOTED - 1] + "…"


VERIFIED_LINE = "a command that passed every check for the similar request "


def verified_entries(intent: str, successes: list[Megram], sops: list[SOPRecord] = (),
                     limit: int = VERIFIED_LINES, threshold: float = MATCH) -> list[_Entry]:
    """SHOULD PREFER lines quoting the verified methods of earlier requests of the same kind as ``intent``.

    Why: a method code verified once is evidence no model's pass is, so it is offered after one success, to any
    request of its kind (artoo.memory.kinds), with the command that passed and the checks it passed; a success a
    model judged (no ``verified:`` line) offers nothing here.  The newest episode of each method stands for it,
    and a method an SOP of the intent already prescribes is left to that SOP."""
    ruled = {m for m in (sop_method(s.content) for s in sops) if m}
    verified, seen = [], set()
    for episode in successes:  # newest first
        checks = episode_verified(episode.content)
        method, command = method_of(episode.content), _verified_command(episode.content)
        if checks is None or episode.state not in SUCCESS_STATES or not command or method in ruled or method in seen:
            continue
        seen.add(method)
        verified.append((episode, checks, command))
    intents = [intent_of(e.content) for e, _, _ in verified]
    quoted = {e.id for e, _, _ in verified}
    background = [intent_of(e.content) for e in successes if e.id not in quoted]  # each request weighed once
    entries = []
    for index, score in same_kind(intent, intents, threshold=threshold, background=background)[:max(0, limit)]:
        episode, checks, command = verified[index]
        checked = f"; its checks passed: {' ; '.join(f'`{c}`' for c in checks[:2])}" if checks else ""
        text = f"{VERIFIED_LINE}{intents[index]!r}: `{command}`{checked} (use this request's own names)"
        entries.append(_Entry("prefer", 5, 1.0 + score, text, command=command))
    return entries


def calibrate(
    intent: str,
    sops: list[SOPRecord],
    potentials: Potentials,
    tool_memory: list[tuple[str, str, Potentials]],
    blocked_tools: list[str] | set[str],
    blocked_targets: Iterable[BlockedTarget | str],
    max_entries: int = 10,
    *,
    tool_sops: list[SOPRecord] = (),
    episodes: list[Megram] = (),
    successes: list[Megram] = (),
) -> Calibration:
    """The calibration for one planning round (pure: no I/O, no LLM).

    ``tool_sops`` are the C rules of tool pairs; ``episodes`` the intent's newest Megrams,
    newest first, whose content the intent's line quotes; ``successes`` the newest successful episodes of
    every intent, whose verified methods of the same kind are offered (``verified_entries``).
    """
    entries = [_sop_entry(s) for s in sops] + [_tool_sop_entry(s) for s in tool_sops] + _tool_entries(tool_memory)
    entries += verified_entries(intent, list(successes), list(sops))
    if (intent_entry := _intent_entry(intent, potentials, list(episodes))) is not None:
        entries.append(intent_entry)
    entries.sort(key=lambda e: (e.rank, -e.weight, e.text))
    kept = entries[: max(0, max_entries)]
    tools, blocked = set(blocked_tools), [BlockedTarget.of(b) for b in blocked_targets]
    targets = {b.target for b in blocked if b.any_use}
    one_way = {(b.target, b.access) for b in blocked if not b.any_use}
    pairs = {(e.tool, e.target, e.access) for e in kept if e.section == "must_not" and e.tool and e.target}
    kept = [e for e in kept if e.section == "must_not"
            or (e.tool not in tools and e.target not in targets and (e.tool, e.target, e.access) not in pairs)]
    must_not = [e.text for e in kept if e.section == "must_not"]
    must_not += [f"use the tool {t!r} (blocked in this task)" for t in sorted(tools)]
    must_not += [f"reuse {t!r} as a tool input (blocked in this task)" for t in sorted(targets)]
    must_not += [f"{a} {t!r} again ({a} was refused in this task; reading it is fine)" for t, a in sorted(one_way)]
    return Calibration(
        space=intent_space(intent),
        potentials=potentials,
        sops=list(sops),
        tool_sops=list(tool_sops),
        prefer=[e.text for e in kept if e.section == "prefer"],
        must_not=must_not,
        caution=[e.text for e in kept if e.section == "caution"],
        verified=[e.command for e in kept if e.section == "prefer" and e.command],
        must_not_tools=tools,
        must_not_targets=targets,
        must_not_access=one_way,
        must_not_pairs=pairs,
    )


SUCCESSES_READ = 200
"""The newest successes of all intents read per plan: the verified ones to match and the words that are common."""


def calibrate_from_store(
    store,
    intent: str,
    blocked_tools: list[str] | set[str],
    blocked_targets: Iterable[BlockedTarget | str],
    plan_tools: list[str] | None = None,
) -> Calibration:
    """Derive tags, query C and MK for the intent, the tool pairs' memory and SOPs, then calibrate."""
    space = intent_space(intent)
    sops = store.query_c(space, ENV_LOCAL)
    potentials = store.query_mk(space, ENV_LOCAL)
    pairs = store.pairs_with_space_prefix("tool:")
    tool_sops = store.query_c_prefix("tool:")
    if plan_tools is not None:
        wanted = {tool_space(t) for t in plan_tools}
        pairs = [pair for pair in pairs if pair[0] in wanted]
        tool_sops = [sop for sop in tool_sops if sop.space in wanted]
    episodes = store.recent(space, ENV_LOCAL) if potentials.action != "Ignore" else []
    successes = store.episodes("intent:", sorted(SUCCESS_STATES), SUCCESSES_READ)
    return calibrate(
        intent,
        sops,
        potentials,
        pairs,
        blocked_tools,
        blocked_targets,
        store.params.max_calibration_entries,
        tool_sops=tool_sops,
        episodes=episodes,
        successes=successes,
    )
