"""The Dreamer: its pure rules table-driven, and whole passes over real DuckDB stores."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from artoo.config.contracts import Megram
from artoo.config.errors import LLMOutputError
from artoo.config.protocol import Consolidation
from artoo.config.settings import MemoryParams
from artoo.memory.dreamer import bankrupt, consolidation_kind, dream, forgets, uncovered
from artoo.memory.potentials import age_days, reference_us, to_us
from artoo.memory.store import MemoryStore

NOW = datetime(2025, 6, 1, tzinfo=UTC)
GOOD = ("intent:deploy_the_site", "env:local")
BAD = ("intent:wipe_the_disk", "env:local")


def mk(i, pair=GOOD, *, level="M", f=0.9, sigma=1.0, k=0.05, days_ago=0.0, derived=()) -> Megram:
    return Megram(
        id=f"{pair[0]}-{i}",
        level=level,
        created_at=NOW - timedelta(days=days_ago),
        space=pair[0],
        entity=pair[1],
        content=f"event {i}",
        state="accept",
        f=f,
        sigma=sigma,
        k=k,
        derived_from=list(derived),
    )


class Distiller:
    """An injected distil callable that answers what it is asked and remembers the calls."""

    def __init__(self, fail_on: set[str] = frozenset(), wrong_kind: bool = False):
        self.calls: list[tuple[str, str, str, list[str]]] = []
        self.fail_on, self.wrong_kind = fail_on, wrong_kind

    def __call__(self, space, entity, kind, megrams):
        self.calls.append((space, entity, kind, sorted(m.id for m in megrams)))
        if space in self.fail_on:
            raise LLMOutputError("the model answered garbage twice")
        if self.wrong_kind:
            kind = "constraint" if kind == "best_practice" else "best_practice"
        return Consolidation(kind=kind, content=f"{kind} for {space}")


def journal(store: MemoryStore) -> list[tuple[str, str]]:
    with store.exclusive() as con:
        return con.execute("SELECT op, megram_id FROM memory_ops ORDER BY op, megram_id").fetchall()


def rows(store: MemoryStore) -> dict[str, tuple]:
    with store.exclusive() as con:
        found = con.execute("SELECT id, level, k, sigma, derived_from FROM megrams").fetchall()
    return {r[0]: r[1:] for r in found}


@pytest.fixture
def store(tmp_path):
    s = MemoryStore(tmp_path, reader_idle_s=0.05)
    yield s
    s.close()


@pytest.mark.parametrize(
    ("f", "k", "days", "forgotten"),
    [
        (0.1, 0.5, 0.0, False),  # refine, just written: exactly at the threshold
        (0.1, 0.5, 0.01, True),  # refine an instant later
        (0.8, 0.05, 41.0, False),  # 0.8·e^(−2.05) ≈ 0.103
        (0.8, 0.05, 42.0, True),  # 0.8·e^(−2.10) ≈ 0.098
        (-0.8, 0.05, 41.0, False),  # attention is |f|
        (1.0, 0.0, 1e6, False),  # timeless
    ],
)
def test_forgetting_rule(f, k, days, forgotten):
    assert forgets(f, k, days, MemoryParams().gc_threshold) is forgotten


@pytest.mark.parametrize(
    ("sigma", "decision", "broke"),
    [
        (1.0, -0.01, True),
        (1.0, 0.0, False),
        (1.0, 2.0, False),
        (0.0, -1.0, True),
        (-1.0, 0.01, True),
        (-1.0, -3.0, False),
        (-1.0, 0.0, False),
    ],
)
def test_bankruptcy_rule(sigma, decision, broke):
    assert bankrupt(sigma, decision) is broke


@pytest.mark.parametrize(
    ("attention", "decision", "kind"),
    [
        (4.99, 4.0, None),
        (5.0, 3.0, "best_practice"),
        (5.0, 2.99, None),
        (5.0, -3.0, "constraint"),
        (9.0, -2.99, None),
        (9.0, 0.0, None),
    ],
)
def test_consolidation_rule(attention, decision, kind):
    assert consolidation_kind(attention, decision, MemoryParams()) == kind


def test_uncovered_evidence():
    assert uncovered(["a", "b", "c"], {"a", "c"}) == ["b"]
    assert uncovered(["a"], {"a", "z"}) == []


@pytest.mark.parametrize("seed", range(3))
def test_pass_forgets_exactly_what_the_rule_says(store, seed):
    rng = random.Random(seed)
    megrams = [
        mk(
            i,
            rng.choice([GOOD, BAD]),
            level=rng.choice("MMKC"),
            f=rng.uniform(0.05, 1.0),
            sigma=rng.choice([-1.0, 1.0]),
            k=rng.choice([0.05, 0.2, 0.5]),
            days_ago=rng.uniform(0, 40),
        )
        for i in range(200)
    ]
    megrams = [m.model_copy(update={"k": 0.0}) if m.level == "C" else m for m in megrams]
    for m in megrams:
        store.write(m)
    at = NOW + timedelta(days=3)
    expected = {
        m.id
        for m in megrams
        if m.level in "MK"
        and forgets(m.f, m.k, age_days(to_us(at), reference_us(m)), store.params.gc_threshold)
    }
    report = dream(store, at)
    assert report.ingested == 200
    assert report.deleted == len(expected) and set(report.deleted_ids) == expected
    assert set(rows(store)) == {m.id for m in megrams} - expected
    assert {i for op, i in journal(store) if op == "forget"} == expected


def test_trust_bankruptcy_demotes_contradicted_rules_by_their_sign(store):
    broken_best = ("intent:p1", "env:local")
    kept_constraint = ("intent:p2", "env:local")
    broken_constraint = ("intent:p3", "env:local")
    quiet_best = ("intent:p4", "env:local")
    store.write(mk("rule", broken_best, level="C", k=0.0, sigma=1.0))
    store.write(mk("fail", broken_best, sigma=-1.0))
    store.write(mk("rule", kept_constraint, level="C", k=0.0, sigma=-1.0))
    store.write(mk("fail", kept_constraint, sigma=-1.0))
    store.write(mk("rule", broken_constraint, level="C", k=0.0, sigma=-1.0))
    store.write(mk("win", broken_constraint, sigma=1.0))
    store.write(mk("rule", quiet_best, level="C", k=0.0, sigma=1.0))
    report = dream(store, NOW)
    demoted = {f"{broken_best[0]}-rule", f"{broken_constraint[0]}-rule"}
    assert set(report.demoted_ids) == demoted and report.demoted == 2
    stored = rows(store)
    for megram_id in demoted:
        assert stored[megram_id][:2] == ("K", store.params.demoted_k)
    assert stored[f"{kept_constraint[0]}-rule"][0] == "C"
    assert stored[f"{quiet_best[0]}-rule"][0] == "C"
    assert {i for op, i in journal(store) if op == "demote"} == demoted


def test_consolidation_happens_once_per_evidence(store):
    for i in range(8):
        store.write(mk(i, GOOD))  # 8 × 0.9 = 7.2 attention and decision
    for i in range(6):
        store.write(mk(i, BAD, f=0.95, sigma=-1.0))  # 5.7 attention, −5.7 decision
    distil = Distiller()
    first = dream(store, NOW, distil)
    assert first.promoted == 2 and first.consolidation_failed == []
    assert sorted((c[0], c[2], len(c[3])) for c in distil.calls) == sorted(
        [(BAD[0], "constraint", 6), (GOOD[0], "best_practice", 8)]
    )
    rules = {r.space: r for space, _ in (GOOD, BAD) for r in store.query_c(space, "env:local")}
    assert (rules[GOOD[0]].sigma, rules[BAD[0]].sigma) == (1.0, -1.0)
    stored = rows(store)
    assert sorted(stored[rules[GOOD[0]].id][3]) == sorted(f"{GOOD[0]}-{i}" for i in range(8))
    assert stored[rules[GOOD[0]].id][1] == 0.0

    second = dream(store, NOW, distil)
    assert (second.promoted, second.demoted, len(distil.calls)) == (0, 0, 2)  # the constraint is not bankrupt

    store.write(mk(99, GOOD))
    third = dream(store, NOW, distil)
    assert third.promoted == 1 and distil.calls[-1][:3] == (GOOD[0], "env:local", "best_practice")
    assert len(distil.calls[-1][3]) == 9
    promoted_ids = set(first.promoted_ids) | set(third.promoted_ids)
    assert {i for op, i in journal(store) if op == "promote"} == promoted_ids


def test_without_distil_consolidation_is_skipped_and_reported(store):
    for i in range(8):
        store.write(mk(i, GOOD))
    report = dream(store, NOW)
    assert report.consolidation_skipped and report.consolidation_eligible == 1 and report.promoted == 0
    assert store.query_c(*GOOD) == []


def _raises_timeout(space, entity, kind, megrams):
    raise TimeoutError("the model did not answer in time")


@pytest.mark.parametrize(
    "distil", [Distiller(fail_on={GOOD[0]}), Distiller(wrong_kind=True), _raises_timeout]
)
def test_failed_distillation_is_reported_and_promotes_nothing(store, distil):
    for i in range(8):
        store.write(mk(i, GOOD))
    report = dream(store, NOW, distil)
    assert report.promoted == 0 and len(report.consolidation_failed) == 1
    assert GOOD[0] in report.consolidation_failed[0]
    assert store.query_c(*GOOD) == []


def test_pass_ingests_and_retires_closed_spools(tmp_path):
    writer = MemoryStore(tmp_path)
    for i in range(5):
        writer.write(mk(i))
    writer.close()
    dreamer = MemoryStore(tmp_path)
    report = dream(dreamer, NOW)
    assert report.ingested == 5 and report.deleted == 0
    assert list(dreamer.spool_dir.glob("*.jsonl")) == []
    assert dreamer.stats()["levels"]["M"] == 5
    dreamer.close()
