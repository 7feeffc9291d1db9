"""R2's memory calibration protocol: pure mapping, priorities, caps, and from a real store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from artoo.config.contracts import Megram, Potentials, SOPRecord
from artoo.config.settings import MemoryParams
from artoo.memory.calibration import calibrate, calibrate_from_store
from artoo.memory.potentials import make_potentials
from artoo.memory.store import MemoryStore
from artoo.memory.tags import ENV_LOCAL, episode_content, episode_quote, intent_space, path_entity, tool_space

PARAMS = MemoryParams()
IGNORE = make_potentials(0.0, 0.0, PARAMS)


def pot(attention: float, decision: float) -> Potentials:
    return make_potentials(attention, decision, PARAMS)


def sop(i: int, sigma: float, content: str | None = None) -> SOPRecord:
    return SOPRecord(
        id=f"r{i}", space="intent:x", entity=ENV_LOCAL, content=content or f"rule {i}", sigma=sigma
    )


@pytest.mark.parametrize(
    ("potentials", "section"),
    [
        (pot(2.0, 1.5), "prefer"),
        (pot(2.0, -1.5), "must_not"),
        (pot(2.0, 0.1), "caution"),
        (pot(0.3, 0.3), None),
    ],
)
def test_intent_action_maps_to_one_section(potentials, section):
    c = calibrate("deploy the site now", [], potentials, [], [], [])
    filled = {name: getattr(c, name) for name in ("prefer", "must_not", "caution") if getattr(c, name)}
    assert list(filled) == ([section] if section else [])
    if section:
        assert "deploy the site now" in filled[section][0]
    else:
        assert c.prompt_block() == ""
    assert c.space == intent_space("deploy the site now") and c.potentials == potentials


@pytest.mark.parametrize(
    ("sigma", "section"), [(1.0, "prefer"), (0.5, "prefer"), (0.0, "must_not"), (-1.0, "must_not")]
)
def test_sops_by_sign(sigma, section):
    c = calibrate("x", [sop(1, sigma, "always run the tests")], IGNORE, [], [], [])
    assert getattr(c, section) == ["always run the tests"]


SHELL_ELSEWHERE = [  # another task's change_approach, twice on one path, once on another
    (tool_space("shell"), path_entity("/srv/x"), pot(1.7, -1.7)),
    (tool_space("shell"), path_entity("/srv/y/app.log"), pot(0.85, -0.85)),
]


@pytest.mark.parametrize(
    ("tool_memory", "pairs", "section_lines"),
    [
        (SHELL_ELSEWHERE, {("shell", "/srv/x", "all"), ("shell", "/srv/y/app.log", "all")},
         {"must_not": ["'shell' on '/srv/x'", "'shell' on '/srv/y/app.log'"]}),
        ([(tool_space("read"), path_entity("/secret"), pot(0.9, -0.9)),  # fails on one target...
          (tool_space("read"), path_entity("/a"), pot(1.6, 1.6))],  # ...works on another: both said
         {("read", "/secret", "all")}, {"must_not": ["'read' on '/secret'"], "prefer": ["'read' on '/a'"]}),
        ([(tool_space("read"), path_entity("/b"), pot(0.9, 0.0))], set(), {"caution": ["'read' on '/b'"]}),
        ([(tool_space("write"), path_entity("/c"), pot(0.2, -0.2))], set(), {}),  # too faint: ignored
        ([(tool_space("shell"), path_entity("/srv/x"), pot(1.7, -1.7)),  # MUST NOT wins over the same pair's
          (tool_space("shell"), path_entity("/srv/x"), pot(1.7, 1.7))],  # prefer (never happens from one store)
         {("shell", "/srv/x", "all")}, {"must_not": ["'shell' on '/srv/x'"]}),
        # a pair blamed for one access (#26) restricts that access only, and says so
        ([(tool_space("shell"), path_entity("/w/data.csv", "write"), pot(0.9, -0.9))],
         {("shell", "/w/data.csv", "write")}, {"must_not": ["'shell' to write '/w/data.csv'"]}),
        ([(tool_space("shell"), path_entity("/w/data.csv", "write"), pot(0.9, -0.9)),  # refused writes...
          (tool_space("shell"), path_entity("/w/data.csv", "read"), pot(1.6, 1.6))],  # ...reads that worked
         {("shell", "/w/data.csv", "write")},
         {"must_not": ["'shell' to write '/w/data.csv'"], "prefer": ["'shell' to read '/w/data.csv'"]}),
    ],
)
def test_tool_memory_restricts_a_tool_on_a_target_never_the_tool(tool_memory, pairs, section_lines):
    c = calibrate("x", [], IGNORE, tool_memory, [], [])
    assert c.must_not_tools == set() and c.must_not_targets == set()
    assert c.must_not_pairs == pairs
    for section in ("must_not", "prefer", "caution"):
        lines = getattr(c, section)
        wanted = section_lines.get(section, [])
        assert len(lines) == len(wanted) and all(w in line for w, line in zip(wanted, lines, strict=True))
    if pairs:
        assert "Tools that must not appear in any subtask" not in c.prompt_block()
        assert "Tool/target pairs that must not be used" in c.prompt_block()


def test_merged_must_not_set_and_must_not_wins_over_prefer():
    tool_memory = [(tool_space("curl"), path_entity("https://x"), pot(1.7, 1.7))]
    c = calibrate("x", [sop(1, -1.0, "never push to main")], IGNORE, tool_memory, ["curl"], ["/tmp/out"])
    assert c.must_not == [
        "never push to main",
        "use the tool 'curl' (blocked in this task)",
        "reuse '/tmp/out' as a tool input (blocked in this task)",
    ]
    assert c.must_not_tools == {"curl"} and c.must_not_targets == {"/tmp/out"}
    assert c.prefer == []


def test_at_most_max_entries_memory_lines_in_priority_order():
    sops = [sop(i, 1.0) for i in range(8)] + [sop(100 + i, -1.0) for i in range(8)]
    c = calibrate("x", sops, pot(3.0, -2.0), [], ["t"], [], max_entries=10)
    memory_lines = [line for line in c.must_not if "blocked in this task" not in line] + c.prefer + c.caution
    assert len(memory_lines) == 10
    assert c.must_not[:8] == [f"rule {100 + i}" for i in range(8)]  # MUST NOT SOPs first
    assert "failed before" in c.must_not[8]  # then the intent's Avoid
    assert c.prefer == ["rule 0"]
    assert c.must_not[-1] == "use the tool 't' (blocked in this task)"


def test_prompt_block_renders_every_section():
    c = calibrate(
        "x",
        [sop(1, 1.0, "prefer globbing")],
        pot(2.0, 0.0),
        [(tool_space("rm"), path_entity("/"), pot(0.9, -0.9))],
        [],
        ["/tmp/gone"],
    )
    block = c.prompt_block()
    for expected in ("MUST NOT", "SHOULD PREFER", "CAUTION", "- prefer globbing", "rm", "/tmp/gone"):
        assert expected in block


def test_from_store_queries_intent_and_plan_tools(tmp_path):
    now = datetime.now(UTC)
    store = MemoryStore(tmp_path, reader_idle_s=0.05)
    intent = "summarise the logs"

    def write(i, space, entity, f, sigma, level="M"):
        store.write(
            Megram(
                id=f"m{i}",
                level=level,
                created_at=now,
                space=space,
                entity=entity,
                content=f"c{i}",
                state="s",
                f=f,
                sigma=sigma,
                k=0.0 if level == "C" else 0.05,
            )
        )

    write(1, intent_space(intent), ENV_LOCAL, 0.9, 1.0)
    write(2, intent_space(intent), ENV_LOCAL, 1.0, 1.0, level="C")
    write(3, tool_space("shell"), path_entity("/var/log"), 0.85, -1.0)
    write(4, tool_space("grep"), path_entity("/var/log"), 0.85, -1.0)
    store.ingest()
    full = calibrate_from_store(store, intent, [], [])
    assert full.must_not_tools == set()
    assert full.must_not_pairs == {("shell", "/var/log", "all"), ("grep", "/var/log", "all")}
    assert "c2" in full.prefer and any("worked before" in line for line in full.prefer)
    assert [s.id for s in full.sops] == ["m2"]
    planned = calibrate_from_store(store, intent, ["curl"], [], plan_tools=["grep"])
    assert planned.must_not_tools == {"curl"} and planned.must_not_pairs == {("grep", "/var/log", "all")}
    store.close()


# ── what the planner is told: the episode behind the intent's action, and the tool-pair SOPs ─────────

FAILED = episode_content("abandon", "count the errors", ["r1 shell: grep ERROR /var/log/a.log → Permission denied"],
                         "Abandoned after 3 replan(s).")
WORKED = episode_content("accept", "count the errors", ["r1 shell: zgrep -c ERROR a.log.gz → 3"], "Accepted.")


@pytest.mark.parametrize(
    ("content", "quote"),
    [
        (FAILED, "tried r1 shell: grep ERROR /var/log/a.log → Permission denied | what happened: Abandoned after 3 "
                 "replan(s)."),
        (episode_content("abandon", "x", [], "Gave up."), "tried (no tool calls) | what happened: Gave up."),
        ("abandon: count the errors — Abandoned after 3 replan(s).",  # written by an older release
         "abandon: count the errors — Abandoned after 3 replan(s)."),
        (episode_content("accept", "x", ["r1 " + "y" * 900], "ok"), "tried r1 " + "y" * 590 + "…"),
    ],
)
def test_episode_quote(content, quote):
    assert episode_quote(content) == quote and len(quote) <= 600


def episode(content: str, sigma: float) -> Megram:
    return Megram(id=content[:8] + str(sigma), created_at=datetime.now(UTC), space="intent:count_the_errors",
                  entity=ENV_LOCAL, content=content, state="s", f=0.9, sigma=sigma, k=0.05)


@pytest.mark.parametrize(
    ("potentials", "episodes", "section", "quoted", "not_quoted"),
    [
        (pot(1.9, -1.9), [episode(WORKED, 1.0), episode(FAILED, -1.0)], "must_not", ["grep ERROR"], ["zgrep"]),
        (pot(1.9, 1.9), [episode(FAILED, -1.0), episode(WORKED, 1.0)], "prefer", ["zgrep -c ERROR"], ["denied"]),
        (pot(1.9, 0.0), [episode(FAILED, -1.0), episode(WORKED, 1.0)], "caution", ["grep ERROR", "zgrep"], []),
        (pot(1.9, -1.9), [], "must_not", ["failed before"], ["last time"]),  # nothing to quote
    ],
)
def test_intent_line_quotes_the_episode_that_explains_it(potentials, episodes, section, quoted, not_quoted):
    c = calibrate("count the errors", [], potentials, [], [], [], episodes=episodes)
    (line,) = getattr(c, section)
    assert all(q in line for q in quoted) and not any(q in line for q in not_quoted)


@pytest.mark.parametrize(
    ("sigma", "section", "pairs"),
    [(1.0, "prefer", set()), (-1.0, "must_not", {("shell", "/var/log/archive", "all")})],
)
def test_tool_pair_sops_are_read(sigma, section, pairs):
    rule = SOPRecord(id="r", space="tool:shell", entity="path:/var/log/archive", content="use zgrep", sigma=sigma)
    c = calibrate("x", [], IGNORE, [], [], [], tool_sops=[rule])
    assert getattr(c, section) == [
        ("the tool" if sigma > 0 else "use the tool") + " 'shell' on '/var/log/archive': use zgrep"]
    assert c.must_not_pairs == pairs and c.must_not_tools == set() and c.tool_sops == [rule]


def test_from_store_reads_tool_pair_sops_and_the_newest_episodes(tmp_path):
    store = MemoryStore(tmp_path, reader_idle_s=0.05)
    now = datetime.now(UTC)
    space = intent_space("count the errors")

    def write(i, level, space_, entity, content, sigma, minutes):
        store.write(Megram(id=f"e{i}", level=level, created_at=now - timedelta(minutes=minutes), space=space_,
                           entity=entity, content=content, state="s", f=0.95, sigma=sigma,
                           k=0.0 if level == "C" else 0.05))

    write(1, "M", space, ENV_LOCAL, "oldest", -1.0, 30)
    write(2, "M", space, ENV_LOCAL, FAILED, -1.0, 20)
    store.ingest()  # one episode in DuckDB, the newest ones still spooled
    write(3, "M", space, ENV_LOCAL, WORKED, 1.0, 25)
    write(4, "C", "tool:shell", "path:/var/log/archive", "use zgrep", 1.0, 10)
    assert [m.id for m in store.recent(space, ENV_LOCAL, limit=2)] == ["e2", "e3"]
    c = calibrate_from_store(store, "count the errors", [], [])
    assert c.potentials.action == "Avoid" and "grep ERROR /var/log/a.log" in c.must_not[0]
    assert [s.id for s in c.tool_sops] == ["e4"] and "the tool 'shell' on '/var/log/archive': use zgrep" in c.prefer
    assert calibrate_from_store(store, "count the errors", [], [], plan_tools=["glob"]).tool_sops == []
    store.ingest()
    with store.exclusive() as con:  # QueryC's recall reset the rule's clock (spec: each hit updates it)
        assert con.execute("SELECT last_recalled_at FROM megrams WHERE id = 'e4'").fetchone()[0] is not None
    store.close()
