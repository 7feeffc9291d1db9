"""One audit history across workers: every worker's chain verified, and the chains checked together.

Why per-worker chains: a worker keeps its audit log under its own ARTOO_HOME (no shared disk
is needed to scale out), and a hash chain has one writer.  The history of the cluster is the
union of the chains.  ``verify_chains`` verifies each chain on its own (tasks.audit.chain),
then checks the union: a Prefect event recorded by two chains (the auditor deployment, which
follows the whole stream, may run on any worker) must be recorded identically in both — the
same event id with a different message, task or payload means one chain was rewritten
consistently with its own hashes, which verifying it alone cannot see.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from artoo.tasks.audit.chain import VerifyResult, read_lines, verify
from artoo.tasks.audit.log import AuditPaths

CHAIN_FIELDS = ("seq", "prev_hash", "hash")
"""Fields that depend on the record's place in its own chain, not on the event."""


@dataclass
class CrossCheck:
    """The union of several chains."""

    results: dict[Path, VerifyResult]
    events: int = 0
    """Distinct Prefect events recorded across all chains."""
    disagreements: list[str] = field(default_factory=list)
    """Event ids recorded differently by two chains."""

    @property
    def ok(self) -> bool:
        """Every chain verifies and the chains agree on every event they share."""
        return all(r.ok for r in self.results.values()) and not self.disagreements


def event_part(line: bytes) -> tuple[str, dict]:
    """(event_id, the record without its chain fields) of one log line."""
    record = json.loads(line)
    return str(record.get("event_id", "")), {k: v for k, v in record.items() if k not in CHAIN_FIELDS}


def verify_chains(homes: list[Path]) -> CrossCheck:
    """Verify the audit chain under each ARTOO_HOME, then check they agree on shared events."""
    check = CrossCheck({})
    seen: dict[str, tuple[Path, dict]] = {}
    for home in homes:
        paths = AuditPaths(Path(home))
        result = verify(paths.log, paths.head)
        check.results[paths.log] = result
        if not result.ok:
            continue
        for line in read_lines(paths.log):
            event_id, body = event_part(line)
            first = seen.setdefault(event_id, (paths.log, body))
            if first[1] != body:
                check.disagreements.append(f"event {event_id}: {first[0]} and {paths.log} record it differently")
    check.events = len(seen)
    return check
