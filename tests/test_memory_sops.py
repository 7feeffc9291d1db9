"""SOPs made by code from repeated successes (issue #26): the pure rules as tables, Dreamer passes over
real DuckDB stores, and the story of three successful tasks whose method reaches a fourth task's plan prompt."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from artoo.config.contracts import Megram
from artoo.config.protocol import Consolidation
from artoo.config.settings import MemoryParams
from artoo.memory.calibration import calibrate_from_store
from artoo.memory.dreamer import dream
from artoo.memory.sops import (
    SOP_STATE,
    Episode,
    command_heads,
    distil_sop,
    method_of,
    plan_follows,
    sop_drafts,
    sop_method,
)
from artoo.memory.store import MemoryStore
from artoo.memory.tags import ENV_LOCAL, episode_content, intent_space

INTENT = "count the lines of every .txt file and write the totals to totals.md"
FIND_WC = "r1 shell: find . -name '*.txt' | xargs wc -l → 3 a.txt 4 b.txt 7 total"
WRITE = "r1 write_file: totals.md → wrote 12 bytes to totals.md"
SOP_FIND_WC = distil_sop(INTENT, ("shell `find | xargs wc -l`", "write_file"), 3)


# ── the method of an episode ──────────────────────────────────────────────────────

HEADS = [  # (shell command line, its heads)
    ("find . -name '*.txt' | xargs wc -l", "find | xargs wc -l"),
    ("find /srv/data -type f -name '*.log' | xargs wc -l 2>/dev/null", "find | xargs wc -l"),
    ("wc -l notes.txt", "wc -l"),
    ("wc -w notes.txt", "wc -w"),
    ("cd data && wc -l *.txt; echo done", "wc -l; echo"),
    ("LC_ALL=C sort -o data.sorted.csv data.csv", "sort -o"),
    ("/usr/bin/grep -c ERROR app.log", "grep -c"),
    ("grep 'a|b' f | sort | uniq -c", "grep | sort | uniq -c"),
    ("xargs -0 -n 1 wc -l", "xargs wc -l"),
    ("(cd x; ls -la)", "ls -la"),
    ("cat 'cut by the GGS at 160 chars", "cat"),
    ("cd /tmp", ""),
]


@pytest.mark.parametrize("command, heads", HEADS)
def test_a_command_line_is_read_as_its_heads(command, heads):
    assert command_heads(command) == heads


METHODS = [  # (tried calls, the method)
    ([FIND_WC, WRITE], ("shell `find | xargs wc -l`", "write_file")),
    (["r1 shell: find /home/u/x -name '*.txt' | xargs wc -l → 9 total", "r1 write_file: out.md → ok"],
     ("shell `find | xargs wc -l`", "write_file")),
    (["r1 shell: wc -l missing.txt → No such file", "r2 glob: *.txt → a.txt", "r2 read_file: a.txt → x",
      "r2 read_file: b.txt → y; z"], ("glob", "read_file")),
    (["r1 shell: ls → a.txt; b.txt", "r1 shell: wc -l a.txt b.txt → 7 total", "r1 shell: wc -l c.txt → 1"],
     ("shell `ls`", "shell `wc -l`")),
    (["r1 shell: cd /tmp → "], ()),
    ([], ()),
]


@pytest.mark.parametrize("tried, method", METHODS)
def test_the_method_is_the_last_rounds_calls_by_tool_and_command_head(tried, method):
    assert method_of(episode_content("accept", INTENT, tried, "Accepted")) == method


def test_a_content_without_a_tried_line_has_no_method():
    assert method_of("accept: say hello (an older Megram: state, intent and summary only)") == ()


# ── the SOP's words ───────────────────────────────────────────────────────────────


def test_the_sop_says_the_method_and_how_often_it_worked_and_reads_back():
    assert SOP_FIND_WC.startswith(f"SOP (worked 3 times for requests like {INTENT!r}): use shell "
                                  "`find | xargs wc -l`, then write_file.")
    assert sop_method(SOP_FIND_WC) == ("shell `find | xargs wc -l`", "write_file")
    assert sop_method("the archived logs are gzip files: read them with zgrep") is None
    with pytest.raises(ValueError):
        distil_sop(INTENT, (), 3)


def plan_json(*subtasks: tuple[str, str, list[str]]) -> str:
    return json.dumps({"task_criteria": [], "subtasks": [
        {"sequence": i + 1, "intent": intent, "context": context, "success_criteria": [], "tools": tools}
        for i, (intent, context, tools) in enumerate(subtasks)]})


FOLLOWS = [  # (plan text, follows SOP_FIND_WC)
    (plan_json(("count lines", "run find . -name '*.txt' | xargs wc -l", ["shell"]),
               ("write totals.md", "", ["write_file"])), True),
    (plan_json(("count lines", "find the .txt files, then wc -l them", ["shell", "write_file"])), True),
    (plan_json(("count lines", "find . -name '*.txt' -exec wc -l {} +", ["shell", "write_file"])), True),
    (plan_json(("count lines", "run find . -name '*.txt' | xargs wc -l", ["shell"])), False),  # no write_file
    (plan_json(("count words", "find . -name '*.txt' | xargs wc -w", ["shell", "write_file"])), False),
    (plan_json(("count lines", "read each file and count", ["glob", "read_file", "write_file"])), False),
    ("1. find . -name '*.txt' | xargs wc -l (shell)\n2. write_file totals.md", True),
    ("use wc-l on the files found, write_file", False),
]


@pytest.mark.parametrize("plan_text, follows", FOLLOWS)
def test_a_plan_follows_the_sop_when_it_names_its_tools_and_commands(plan_text, follows):
    assert plan_follows(SOP_FIND_WC, plan_text) is follows


def test_a_rule_whose_method_cannot_be_read_is_never_followed():
    assert plan_follows("prefer shell for counting lines", plan_json(("x", "shell wc -l", ["shell"]))) is False


DRAFTS = [  # (methods of the episodes newest first, covered indexes, N, the SOPs' methods and evidence)
    (["fw", "fw", "fw"], set(), 3, [("fw", [0, 1, 2])]),
    (["fw", "fw"], set(), 3, []),
    (["fw", "fw", "g"], set(), 3, []),
    (["fw", "fw", "fw", "g", "g"], set(), 2, [("fw", [0, 1, 2]), ("g", [3, 4])]),
    (["fw", "fw", "fw", "fw"], {0, 1}, 3, []),
    (["none", "none", "none"], set(), 3, []),
]
TRIED = {"fw": [FIND_WC, WRITE], "g": ["r1 glob: *.txt → a.txt", WRITE], "none": []}
METHOD = {"fw": ("shell `find | xargs wc -l`", "write_file"), "g": ("glob", "write_file")}


@pytest.mark.parametrize("kinds, covered, n, expected", DRAFTS)
def test_an_sop_needs_n_uncovered_successes_with_one_method(kinds, covered, n, expected):
    episodes = [Episode(f"e{i}", episode_content("accept", INTENT, TRIED[k], "ok")) for i, k in enumerate(kinds)]
    drafts = sop_drafts(episodes, {f"e{i}" for i in covered}, set(), n)
    assert [(d.method, d.evidence_ids) for d in drafts] == [
        (METHOD[k], [f"e{i}" for i in ids]) for k, ids in expected]


def test_a_method_a_rule_already_prescribes_makes_no_second_sop():
    episodes = [Episode(f"e{i}", episode_content("accept", INTENT, [FIND_WC, WRITE], "ok")) for i in range(3)]
    assert sop_drafts(episodes, set(), {METHOD["fw"]}, 3) == []


# ── Dreamer passes over a real store ──────────────────────────────────────────────

NOW = datetime(2025, 6, 1, tzinfo=UTC)


def episode(state: str, tried: list[str], minutes_ago: int = 0, intent: str = INTENT) -> Megram:
    f, sigma = {"accept": (0.9, 1.0), "success": (0.8, 1.0), "abandon": (0.95, -1.0)}[state]
    return Megram(id=uuid.uuid4().hex, created_at=NOW - timedelta(minutes=minutes_ago), space=intent_space(intent),
                  entity=ENV_LOCAL, content=episode_content(state, intent, tried, f"{state} summary"),
                  state=state, f=f, sigma=sigma, k=0.05)


def store_with(tmp_path: Path, *megrams: Megram, n: int = 3) -> MemoryStore:
    store = MemoryStore(tmp_path / "home", MemoryParams(sop_min_successes=n))
    for m in megrams:
        store.write(m)
    return store


def sops_of(store: MemoryStore) -> list:
    return store.query_c(intent_space(INTENT), ENV_LOCAL, recall=False)


def test_three_successes_with_one_method_make_one_sop_from_those_episodes(tmp_path):
    found = [episode("accept", [FIND_WC, WRITE], 3), episode("success", [FIND_WC, WRITE], 2),
             episode("accept", ["r1 shell: find data -name '*.txt' | xargs wc -l → 1 total", WRITE], 1)]
    with store_with(tmp_path, *found) as store:
        report = dream(store, NOW)
        assert (report.sops, report.promoted) == (1, 1)
        [sop] = sops_of(store)
        assert sop.content == distil_sop(INTENT, METHOD["fw"], 3) and sop.sigma == 1.0
        with store.exclusive() as con:
            level, state, k, derived = con.execute(
                "SELECT level, state, k, derived_from FROM megrams WHERE id = ?", [sop.id]).fetchone()
            detail = con.execute("SELECT detail FROM memory_ops WHERE megram_id = ?", [sop.id]).fetchone()[0]
        assert (level, state, k) == ("C", SOP_STATE, 0.0)
        assert sorted(derived) == sorted(m.id for m in found)
        assert "3 successful episode(s)" in detail


@pytest.mark.parametrize("third", [
    episode("abandon", [FIND_WC, WRITE]),                                     # a failure does not count
    episode("accept", ["r1 glob: *.txt → a.txt", "r1 read_file: a.txt → x", WRITE]),  # nor another method
    episode("accept", [FIND_WC, WRITE], intent="count words in every file"),   # nor another intent
])
def test_two_successes_and_one_that_does_not_count_make_no_sop(tmp_path, third):
    with store_with(tmp_path, episode("accept", [FIND_WC, WRITE], 2), episode("accept", [FIND_WC, WRITE], 1),
                    third) as store:
        assert dream(store, NOW).sops == 0
        assert sops_of(store) == []


def test_n_is_a_setting_and_n_minus_one_successes_make_no_sop(tmp_path):
    two = [episode("accept", [FIND_WC, WRITE], i) for i in range(2)]
    with store_with(tmp_path, *two, n=3) as store:
        assert dream(store, NOW).sops == 0
    with store_with(tmp_path / "n2", *two, n=2) as store:
        assert dream(store, NOW).sops == 1
        assert "worked 2 times" in sops_of(store)[0].content


def test_a_second_pass_and_a_fourth_success_make_no_duplicate(tmp_path):
    with store_with(tmp_path, *(episode("accept", [FIND_WC, WRITE], i + 5) for i in range(3))) as store:
        assert dream(store, NOW).sops == 1
        assert dream(store, NOW).sops == 0
        for i in range(3):
            store.write(episode("accept", [FIND_WC, WRITE], i))
        assert dream(store, NOW).sops == 0
        assert len(sops_of(store)) == 1


def test_a_pass_writes_at_most_max_sops_strongest_first_and_the_next_pass_the_rest(tmp_path):
    intents = ["count the lines in a", "sum the sizes of b", "list the logs of c"]
    found = [episode("accept", [FIND_WC, WRITE], i, intent=intent)
             for n, intent in enumerate(intents) for i in range(3 + n)]  # the last intent is the strongest
    with store_with(tmp_path, *found) as store:
        assert dream(store, NOW, max_sops=2).sops == 2
        assert store.query_c(intent_space(intents[0]), ENV_LOCAL, recall=False) == []
        assert dream(store, NOW, max_sops=2).sops == 1
        assert all(store.query_c(intent_space(i), ENV_LOCAL, recall=False) for i in intents)


def test_the_llm_consolidation_still_runs_beside_the_sop(tmp_path):
    """Three accepts make the SOP; three more reach the potentials thresholds (attention 5.4), and the
    injected LLM distil is asked about the three the SOP does not cover.  Six at once in one pass: the LLM's
    rule comes first and covers them all, so no SOP is made from that evidence."""
    asked = []

    def distil(space, entity, kind, megrams):
        asked.append((space, kind, len(megrams)))
        return Consolidation(kind=kind, content="an LLM-distilled best practice")

    with store_with(tmp_path, *(episode("accept", [FIND_WC, WRITE], i + 10) for i in range(3))) as store:
        assert (dream(store, NOW, distil).sops, asked) == (1, [])
        for i in range(3):
            store.write(episode("accept", [FIND_WC, WRITE], i))
        report = dream(store, NOW, distil)
        assert (report.sops, report.promoted) == (0, 1)
        assert asked == [(intent_space(INTENT), "best_practice", 6)]
        assert len(sops_of(store)) == 2
    with store_with(tmp_path / "once", *(episode("accept", [FIND_WC, WRITE], i) for i in range(6))) as store:
        report = dream(store, NOW, distil)
        assert (report.sops, report.promoted) == (0, 1)
        assert [s.content for s in sops_of(store)] == ["an LLM-distilled best practice"]


def test_negative_feedback_bankrupts_the_sop_and_its_episodes_make_no_new_one(tmp_path):
    """R5's feedback on the rule's pair turns the decision negative; the next pass demotes the SOP (C → K),
    and the episodes it came from, still covered by it, do not make it again."""
    with store_with(tmp_path, *(episode("accept", [FIND_WC, WRITE], i) for i in range(3))) as store:
        dream(store, NOW)
        [sop] = sops_of(store)
        for _ in range(3):
            store.record_negative_feedback(sop.id, "a plan made with this rule failed")
        report = dream(store, datetime.now(UTC))
        assert report.demoted_ids == [sop.id] and report.sops == 0
        assert sops_of(store) == []
        assert dream(store, datetime.now(UTC)).sops == 0


def test_the_shared_postgres_memory_gets_the_same_sop(memory_pg_url):
    """The Dreamer runs its SQL on the PostgreSQL backend's DuckDB copy and writes the SOP back."""
    from artoo.memory.pg_store import PostgresMemoryStore

    with PostgresMemoryStore(memory_pg_url, MemoryParams(sop_min_successes=3)) as store:
        for i in range(3):
            store.write(episode("accept", [FIND_WC, WRITE], i))
        assert dream(store, NOW).sops == 1
        assert [s.content for s in sops_of(store)] == [distil_sop(INTENT, METHOD["fw"], 3)]
        assert dream(store, NOW).sops == 0


def test_the_calibration_quotes_the_sop_as_should_prefer(tmp_path):
    with store_with(tmp_path, *(episode("accept", [FIND_WC, WRITE], i) for i in range(3))) as store:
        dream(store, NOW)
        block = calibrate_from_store(store, "count the lines in notes.txt", [], []).prompt_block()
    prefer = block.split("SHOULD PREFER (worked before):\n", 1)[1]
    assert prefer.startswith(f"- {distil_sop(INTENT, METHOD['fw'], 3)}")


# ── the story: three tasks, a Dreamer pass, a fourth task's plan prompt ──────────


@pytest.mark.usefixtures("prefect_api")
def test_three_successful_tasks_teach_a_fourth_plan_their_method(scripted, artoo_env: Path):
    """Three runs of ``artoo run --json`` count lines with ``wc -l`` and are accepted; the real GGS writes
    their intent Megrams.  One Dreamer pass distils the SOP (no LLM).  The fourth task's planner request,
    as the scripted server received it, quotes the SOP's words."""
    from tests.conftest import final_from, run_cli
    from tests.scenario_kit import agent, call, done, plan, scenario, spec, subtask, task_verdict, verdict

    workspace = artoo_env / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "notes.txt").write_text("a\nb\nc\n")
    request, c = "count the lines in notes.txt", "the line count of notes.txt is printed"
    runs = 4
    server = scripted(scenario(
        TaskSpec=[spec(f"count_{i}", request) for i in range(runs)],
        Plan=[plan([subtask("count the lines", [c], tools=["shell"])], ["the count was printed"])] * runs,
        tools=[call("shell", command=f"wc -l {workspace}/notes.txt"), done("3")] * runs,
        AgentVerdict=[agent(verdict(c, True, evidence="wc printed 3"))] * runs,
        TaskVerdict=[task_verdict(verdict("the count was printed", True))] * runs,
    ))
    home = artoo_env / "home"
    for _ in range(3):
        code, out, _ = run_cli("run", "--json", request)
        assert (code, final_from(out)["directive"]) == (0, "accept")
    with MemoryStore(home) as store:
        report = dream(store)
        [sop] = store.query_c(intent_space(request), ENV_LOCAL, recall=False)
    assert report.sops == 1
    assert sop.content.startswith(f"SOP (worked 3 times for requests like {request!r}): use shell `wc -l`")
    code, out, _ = run_cli("run", "--json", request)
    assert (code, final_from(out)["directive"]) == (0, "accept")
    plans = [r for r in server.requests if r["schema"] == "Plan"]
    assert len(plans) == runs
    first, last = ("\n".join(str(m.get("content") or "") for m in p["body"]["messages"]) for p in (plans[0], plans[-1]))
    assert "SOP (worked" not in first
    assert sop.content in last
