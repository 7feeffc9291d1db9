"""Verified methods: a success code checked is written as such, offered to the next request of its kind after one
success, and made an SOP after two; a success a model judged keeps its weaker standing."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from artoo.config.contracts import CriterionVerdict, Megram, SOPRecord, SubTaskOutcome
from artoo.config.settings import MemoryParams
from artoo.memory.calibration import calibrate, calibrate_from_store, verified_entries
from artoo.memory.dreamer import dream
from artoo.memory.kinds import kind_words, same_kind
from artoo.memory.sops import Episode, distil_sop, method_of, sop_drafts
from artoo.memory.store import MemoryStore
from artoo.memory.tags import BY_REFERENCE, ENV_LOCAL, episode_content, episode_verified, intent_space
from artoo.tasks.ggs.controller import _Reading, verified_checks

NOW = datetime(2025, 6, 1, tzinfo=UTC)
COPY = "copy the csv files into backup"
COPY_CMD = "r1 shell: mkdir -p backup && cp *.csv backup/ → exit 0"
CHECKS = ("test -d backup", "cmp a.csv backup/a.csv")


def success(intent: str = COPY, tried: tuple[str, ...] = (COPY_CMD,), verified: tuple[str, ...] | None = CHECKS,
            state: str = "accept", minutes_ago: int = 0) -> Megram:
    return Megram(id=uuid.uuid4().hex, created_at=NOW - timedelta(minutes=minutes_ago), space=intent_space(intent),
                  entity=ENV_LOCAL, content=episode_content(state, intent, list(tried), "Accepted.", verified),
                  state=state, f=0.9, sigma=1.0, k=0.05)


# ── the mark ──────────────────────────────────────────────────────────────────────

@pytest.mark.parametrize(("verified", "read"), [
    (None, None),                                  # a model judged it (and every Megram written before checks)
    (CHECKS, CHECKS),
    (("grep -q 'a;b' x ",), ("grep -q 'a;b' x",)),  # a check may hold ';' and loses only its outer spaces
    ((), ()),                                      # the reference run alone verified it
    (("  ",), ()),
])
def test_a_verified_line_reads_back_as_its_checks(verified, read):
    content = episode_content("accept", COPY, [COPY_CMD], "ok", verified)
    assert episode_verified(content) == read
    assert (BY_REFERENCE in content) == (read == ())
    assert method_of(content) == ("shell `mkdir -p; cp`",)  # the method is read as before


def test_an_old_content_is_a_success_a_model_judged():
    assert episode_verified("accept: count the lines\ntried: r1 shell: wc -l a → 3\nresult: ok") is None
    assert episode_verified("accept: count the lines (3 files)") is None


def _verdict(verdict: str = "pass", by: str = "check", mode: str = "verifiable", check: str = "test -d backup"):
    return CriterionVerdict(criterion=f"c {uuid.uuid4().hex[:4]}", verdict=verdict, by=by, mode=mode, check=check)


def _reading(step: list[CriterionVerdict], task: list[CriterionVerdict] = ()) -> _Reading:
    outcome = SubTaskOutcome(subtask_id="s1", parent_task_id="t", status="matched", criteria_verdicts=step)
    return _Reading(round=1, outcomes=[outcome], task_verdicts=list(task), D=0.0, P=0.0, omega=0.1, L=0.0,
                    grad=0.0, urgency="low")


@pytest.mark.parametrize(("step", "task", "expected"), [
    ([_verdict()], [_verdict(check="cmp a b")], ("test -d backup", "cmp a b")),
    ([_verdict(), _verdict(mode="plausible", by="model")], [], ("test -d backup",)),  # the judge's plausible: fine
    ([_verdict(check="")], [], ()),                                                  # a reference run decided
    ([_verdict(), _verdict(by="model")], [], None),                                  # a model passed a verifiable one
    ([_verdict(verdict="fail")], [], None),
    ([_verdict(mode="plausible", by="model")], [], None),                            # nothing verifiable at all
    ([], [], None),
])
def test_a_round_is_verified_only_when_code_met_every_verifiable_criterion(step, task, expected):
    assert verified_checks(_reading(step, task)) == expected


# ── kinds ─────────────────────────────────────────────────────────────────────────

@pytest.mark.parametrize(("request_", "words"), [
    ("copy the csv files into backup", {"copy", "the", "csv", "files", "into", "backup"}),
    ("copy every .txt into archive", {"copy", "every", "into", "archive"}),
    ("Set LOG_LEVEL to debug in the .env file", {"set", "debug", "the", "file"}),
    ("Change the server port in config.ini to 9000.", {"change", "the", "server", "port"}),
    ("list the .log files in logs/ that contain ERROR", {"list", "the", "files", "that", "contain"}),
])
def test_the_kind_words_leave_out_this_tasks_names(request_, words):
    assert kind_words(request_) == words


@pytest.mark.parametrize(("request_", "earlier", "matches"), [
    ("copy every .txt into archive", ["copy the csv files into backup"], True),
    ("Make a folder named old and copy the log files into it",
     ["Make a folder called backup and copy all the CSV files into it."], True),
    ("count the lines of notes.txt", ["copy the csv files into backup"], False),
    ("Change the server port in config.ini to 9000.", ["delete all the .tmp files"], False),
    ("sort names.txt alphabetically into sorted.txt", ["Sort the words in list.txt alphabetically, in place"], True),
])
def test_requests_of_one_kind_match_and_others_do_not(request_, earlier, matches):
    assert bool(same_kind(request_, earlier)) is matches


def test_a_word_most_requests_hold_weighs_less_than_a_rare_one():
    background = [f"count the {w} in it" for w in ("lines", "words", "rows", "bytes")]
    shared_common = same_kind("write the sums", ["read the logs"], threshold=0, background=background)
    shared_rare = same_kind("write the sums", ["write a log"], threshold=0, background=background)
    assert shared_common[0][1] < shared_rare[0][1]


# ── the SHOULD PREFER line ────────────────────────────────────────────────────────

def test_one_verified_success_offers_its_command_and_checks_to_a_request_of_its_kind():
    [entry] = verified_entries("copy every .txt into archive", [success()])
    assert entry.section == "prefer"
    assert "`mkdir -p backup && cp *.csv backup/`" in entry.text and repr(COPY) in entry.text
    assert "`test -d backup` ; `cmp a.csv backup/a.csv`" in entry.text
    c = calibrate("copy every .txt into archive", [], calibrate_ignore(), [], [], [], successes=[success()])
    assert c.prefer == [entry.text] and "SHOULD PREFER" in c.prompt_block()
    assert c.verified == ["mkdir -p backup && cp *.csv backup/"]  # what the decision log keeps, typed


def calibrate_ignore():
    from artoo.memory.potentials import make_potentials

    return make_potentials(0.0, 0.0, MemoryParams())


@pytest.mark.parametrize("episodes", [
    [success(verified=None)],                                    # a model judged it: no line
    [success(state="abandon")],                                  # not a success
    [success(tried=())],                                         # nothing recorded to quote
    [success(intent="count the lines of notes.txt", tried=("r1 shell: wc -l notes.txt → 3",))],  # another kind
])
def test_no_line_without_a_verified_success_of_the_same_kind(episodes):
    assert verified_entries("copy every .txt into archive", episodes) == []


def test_the_newest_success_stands_for_its_method_and_an_sop_covers_its_own():
    older, newer = success(minutes_ago=5), success(intent="copy the png files into images", minutes_ago=1)
    [entry] = verified_entries("copy the txt files into archive", [newer, older])
    assert "'copy the png files into images'" in entry.text
    rule = SOPRecord(id="s", space=intent_space(COPY), entity=ENV_LOCAL, sigma=1.0,
                     content=distil_sop(COPY, ("shell `mkdir -p; cp`",), 2))
    assert verified_entries("copy the txt files into archive", [newer, older], [rule]) == []


def test_at_most_the_limit_of_lines_best_first():
    found = [success(intent=f"copy the {ext} files into {ext}_backup", tried=(f"r1 shell: {program} *.{ext} b/ → ok",))
             for ext, program in (("csv", "cp"), ("txt", "rsync"), ("png", "install"))]
    entries = verified_entries("copy the md files into md_backup", found, limit=2)
    assert len(entries) == 2 and all(e.text.startswith("a command that passed every check") for e in entries)


# ── SOPs ──────────────────────────────────────────────────────────────────────────

@pytest.mark.parametrize(("verified", "n_verified", "expected"), [
    ([CHECKS, CHECKS], 2, 1),
    ([CHECKS, None], 2, 0),
    ([None, None], 2, 0),
    ([CHECKS, CHECKS], 3, 0),
    ([CHECKS], 1, 1),
])
def test_a_verified_method_needs_fewer_repeats_to_become_an_sop(verified, n_verified, expected):
    episodes = [Episode(f"e{i}", episode_content("accept", COPY, [COPY_CMD], "ok", v)) for i, v in enumerate(verified)]
    assert len(sop_drafts(episodes, set(), set(), 3, n_verified)) == expected


def test_the_dreamer_makes_an_sop_of_two_verified_successes_not_of_two_judged(tmp_path: Path):
    with MemoryStore(tmp_path / "v", MemoryParams()) as store:
        for i in range(2):
            store.write(success(minutes_ago=i + 1))
        assert dream(store, NOW).sops == 1
        [rule] = store.query_c(intent_space(COPY), ENV_LOCAL, recall=False)
        assert "worked 2 times" in rule.content
    with MemoryStore(tmp_path / "j", MemoryParams()) as store:
        for i in range(2):
            store.write(success(verified=None, minutes_ago=i + 1))
        assert dream(store, NOW).sops == 0


# ── from a real store ─────────────────────────────────────────────────────────────

def test_the_store_reads_the_successes_of_every_intent_spooled_and_ingested(tmp_path: Path):
    with MemoryStore(tmp_path / "home", MemoryParams()) as store:
        first = success(minutes_ago=3)
        store.write(first)
        store.ingest()
        second = success(intent="copy the png files into images", minutes_ago=1)
        store.write(second)  # still in the spool
        store.write(success(state="abandon"))
        store.write(Megram(id="t", created_at=NOW, space="tool:shell", entity="path:/x", content="accept: x",
                           state="accept", f=0.9, sigma=1.0, k=0.05))
        found = store.episodes("intent:", ["accept", "success"])
        assert [m.id for m in found] == [second.id, first.id]
        assert found[1].space == intent_space(COPY) and episode_verified(found[1].content) == CHECKS
        block = calibrate_from_store(store, "copy the txt files into archive", set(), []).prompt_block()
    assert "'copy the png files into images'" in block and "`mkdir -p backup && cp *.csv backup/`" in block


def test_postgres_reads_the_same_successes_as_duckdb(tmp_path: Path, memory_pg_url: str):
    from artoo.memory.pg_store import PostgresMemoryStore

    found = [success(minutes_ago=3), success(intent="copy the png files into images", minutes_ago=1),
             success(state="abandon", minutes_ago=2)]
    with MemoryStore(tmp_path / "home", MemoryParams()) as local, \
            PostgresMemoryStore(memory_pg_url, MemoryParams()) as shared:
        for m in found:
            local.write(m)
            shared.write(m)
        local.ingest()
        read = [store.episodes("intent:", ["accept", "success"], limit=5) for store in (local, shared)]
    assert [[(m.id, m.content, m.state) for m in r] for r in read] == [[(m.id, m.content, m.state)
                                                                          for m in (found[1], found[0])]] * 2
