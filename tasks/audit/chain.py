"""The audit log's hash chain: canonical JSON, SHA-256 links, and verification.

Every record is written as its canonical JSON (sorted keys, no spaces, UTF-8) on one
line.  ``hash`` is the SHA-256 of the record's canonical JSON without ``hash``;
``prev_hash`` is the SHA-256 of the previous line exactly as written (that is, the
previous record's canonical JSON including its hash), 64 zeros for the first record.
So editing a byte breaks that record's own hash, deleting or reordering lines breaks
the next record's ``prev_hash``, and truncating the tail is caught by the head file
(the count and last link the writer recorded).  Verification is a pure fold over lines.

A record may carry fields beyond the AuditEvent contract (``RECORD_EXTRAS``): each is a
non-empty string, written only when the observation has one, so a record without it is
byte-for-byte what the writer produced before the field existed, and an old log verifies.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from artoo.config.audit_contracts import AuditEvent

GENESIS = "0" * 64
RECORD_EXTRAS = ("run",)
"""Record fields outside the AuditEvent contract: ``run`` is the bus's ``artoo.run`` label (which run
of a task published the message), added after audit logs already existed."""


def canonical(obj: Any) -> bytes:
    """The one byte form a record is hashed and written in."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def digest(data: bytes) -> str:
    """SHA-256 hex digest."""
    return hashlib.sha256(data).hexdigest()


def _contract_part(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if k not in RECORD_EXTRAS}


def seal(fields: dict[str, Any], seq: int, prev_hash: str) -> dict[str, Any]:
    """A complete, validated record (as JSON data) for an observation at position ``seq``."""
    event = AuditEvent.model_validate({**_contract_part(fields), "seq": seq, "prev_hash": prev_hash, "hash": ""})
    body = event.model_dump(mode="json", exclude={"hash", *RECORD_EXTRAS})
    body.update({k: str(fields[k]) for k in RECORD_EXTRAS if fields.get(k)})
    return {**body, "hash": digest(canonical(body))}


def line_of(record: dict[str, Any]) -> bytes:
    """The record as written: canonical JSON and a newline."""
    return canonical(record) + b"\n"


def link_of(line: bytes) -> str:
    """The ``prev_hash`` the next record must carry (``line`` without its newline)."""
    return digest(line.rstrip(b"\n"))


@dataclass(frozen=True)
class VerifyResult:
    """Outcome of recomputing the chain; ``first_broken`` is a 1-based record (line) number."""

    ok: bool
    records: int
    first_broken: int | None = None
    reason: str = ""


def check_record(line: bytes, number: int, prev_link: str) -> str | None:
    """Why the record on line ``number`` breaks the chain, or None when it holds."""
    if not line.strip():
        return "blank line"
    try:
        record = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return f"not valid JSON ({exc})"
    if not isinstance(record, dict) or not isinstance(record.get("hash"), str):
        return "not an audit record (no hash)"
    body = {k: v for k, v in record.items() if k != "hash"}
    if digest(canonical(body)) != record["hash"]:
        return "content does not match its hash (the record was edited)"
    if canonical(record) != line:
        return "not in canonical form (the line was reformatted)"
    if record.get("prev_hash") != prev_link:
        return "prev_hash does not match the previous record (a line was deleted, inserted or moved)"
    if record.get("seq") != number:
        return f"seq {record.get('seq')} at position {number} (lines were deleted or reordered)"
    bad = [k for k in RECORD_EXTRAS if k in record and not (isinstance(record[k], str) and record[k])]
    if bad:
        return f"{bad[0]} is not a non-empty string"
    try:
        AuditEvent.model_validate(_contract_part(record))
    except ValidationError as exc:
        return f"not a valid AuditEvent ({exc.error_count()} error(s))"
    return None


def verify_lines(lines: Iterable[bytes], head: dict[str, Any] | None = None) -> VerifyResult:
    """Recompute the chain over raw lines (each with or without its newline)."""
    prev, count = GENESIS, 0
    links: list[str] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.endswith(b"\n"):
            return VerifyResult(False, count, number, "incomplete last line (a write was cut short)")
        line = raw[:-1]
        reason = check_record(line, number, prev)
        if reason:
            return VerifyResult(False, count, number, reason)
        prev, count = link_of(line), number
        links.append(prev)
    return _check_head(count, links, head)


def _check_head(count: int, links: list[str], head: dict[str, Any] | None) -> VerifyResult:
    if not head:
        return VerifyResult(True, count)
    expected = int(head.get("records", 0))
    if expected > count:
        return VerifyResult(False, count, count + 1,
                            f"the log ends after record {count} but {expected} were written (lines were deleted)")
    if expected and links[expected - 1] != head.get("link"):
        return VerifyResult(False, count, expected, "does not match the head the writer recorded (it was rewritten)")
    return VerifyResult(True, count)


def read_lines(path: Path) -> list[bytes]:
    """The log's lines as raw bytes (split on newline only; payload text may hold other separators)."""
    if not path.exists():
        return []
    data = path.read_bytes()
    lines = data.split(b"\n")
    tail = lines.pop()  # after the last newline: empty, or an incomplete record
    whole = [line + b"\n" for line in lines]
    return whole + ([tail] if tail else [])


def verify(path: Path, head_path: Path | None = None) -> VerifyResult:
    """Verify the log at ``path`` (and its head file, when there is one)."""
    head = None
    if head_path is not None and head_path.exists():
        try:
            head = json.loads(head_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return VerifyResult(False, 0, None, f"the head file {head_path} is unreadable")
    return verify_lines(read_lines(path), head)
