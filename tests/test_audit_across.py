"""One audit history across workers: each worker's chain verifies, and chains agree on shared events.

Chains are real logs written by the real writer (tasks.audit.log) under one ARTOO_HOME per
worker; the second chain is then forged consistently (its own hashes recomputed), which
verifying it alone cannot see but checking it against the first can.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from artoo.tasks.audit.across import verify_chains
from artoo.tasks.audit.chain import GENESIS, canonical, digest
from artoo.tasks.audit.log import AuditLog
from tests.conftest import run_cli
from tests.test_audit_chain import obs


def reseal(log: Path, edit) -> None:
    """Rewrite a chain with ``edit`` applied to each record, hashes and head recomputed (a careful forger)."""
    prev, out = GENESIS, []
    for line in log.read_bytes().split(b"\n")[:-1]:
        record = edit(json.loads(line))
        record["prev_hash"] = prev
        body = {k: v for k, v in record.items() if k != "hash"}
        record["hash"] = digest(canonical(body))
        written = canonical(record)
        prev = digest(written)
        out.append(written + b"\n")
    log.write_bytes(b"".join(out))
    (log.parent / "audit.head.json").write_text(json.dumps({"records": len(out), "link": prev}))


@pytest.fixture
def homes(tmp_path: Path) -> list[Path]:
    shared = obs(1, task_id="everyone")  # seen by the auditor on two workers
    own = [[obs(i, task_id=f"w{n}") for i in range(1, 4)] for n in range(3)]
    paths = []
    for n in range(3):
        home = tmp_path / f"w{n}"
        AuditLog(home).append(own[n] + ([shared] if n < 2 else []))
        paths.append(home)
    return paths


def test_intact_chains_agree_and_their_union_is_counted(homes):
    check = verify_chains(homes)
    assert check.ok and all(r.records for r in check.results.values())
    assert check.events == 3 * 3 + 1


def test_a_broken_chain_fails_the_whole_history(homes):
    log = homes[2] / "audit" / "audit.jsonl"
    log.write_bytes(log.read_bytes().replace(b'"task_seq":2', b'"task_seq":7', 1))
    check = verify_chains(homes)
    assert not check.ok and not check.results[log].ok


def test_a_consistently_forged_chain_is_caught_by_the_other_chains(homes):
    log = homes[1] / "audit" / "audit.jsonl"

    def forge(record: dict) -> dict:
        if record["task_id"] == "everyone":
            record["payload"]["note"] = "nothing happened"
        return record

    reseal(log, forge)
    alone = verify_chains([homes[1]])
    assert alone.ok  # on its own the forged chain verifies
    together = verify_chains(homes)
    assert not together.ok and len(together.disagreements) == 1


def test_the_cli_verifies_several_homes(homes):
    code, out, _ = run_cli("audit", "verify", *[a for h in homes for a in ("--home", str(h))])
    assert code == 0 and "3 chain(s) intact and in agreement: 10 distinct event(s)" in out
    reseal(homes[0] / "audit" / "audit.jsonl",
           lambda r: {**r, "payload": {**r["payload"], "note": "x"}} if r["task_id"] == "everyone" else r)
    code, _, err = run_cli("audit", "verify", *[a for h in homes for a in ("--home", str(h))])
    assert code == 1 and "record it differently" in err
