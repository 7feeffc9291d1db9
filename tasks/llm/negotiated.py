"""What each endpoint and model accepted, remembered under ARTOO_HOME: the probe costs one request, once.

Why a file: a server that refuses ``json_schema`` or ``tools`` refuses it in every run, and the
refused request costs a round trip (seconds, on a local CPU model) at the start of each run and
in each process (the CLI's early R1 request, the flow's, the Dreamer's).  One small JSON file,
``$ARTOO_HOME/llm/negotiated.json``, keyed by base URL then model::

    {"http://127.0.0.1:8080/v1": {"qwen": {"structured": "json_object_schema",
                                          "structured_because": "HTTP 500: …",
                                          "tools": "native", "tools_because": "accepted",
                                          "updated": "2026-11-24T19:52:03+00:00"}}}

Writes are read-modify-write under an exclusive ``flock`` of a sidecar lock file and land with
``os.replace`` (atomic), so concurrent runs on one home neither corrupt the file nor drop each
other's entries, and readers never see half a file.  A corrupt or unreadable file is ignored with
a warning (the probe simply happens again); before the next write replaces it, its bytes are kept
beside it as ``negotiated.json.corrupt``.  Nothing here is ever fatal to a run.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path

_log = logging.getLogger("artoo.llm")

Entries = dict[str, dict[str, dict[str, str]]]


def negotiated_path(home: Path) -> Path:
    """Where a home keeps its negotiated modes."""
    return home / "llm" / "negotiated.json"


class NegotiationStore:
    """The remembered modes of one ARTOO_HOME (see the module docstring); ``path`` None remembers nothing."""

    def __init__(self, path: Path | None):
        self.path = path

    def entries(self) -> Entries:
        """Every remembered endpoint: {base_url: {model: entry}}; {} when missing or unreadable."""
        entries, _ = self._read()
        return entries

    def get(self, base_url: str, model: str) -> dict[str, str]:
        """The entry of one endpoint and model ({} when none)."""
        return dict(self.entries().get(base_url, {}).get(model, {}))

    def remember(self, base_url: str, model: str, kind: str, mode: str, because: str) -> None:
        """Record that ``kind`` ("structured", "tools" or "turn") uses ``mode`` on this endpoint, and why."""
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _locked(self.path.with_name(self.path.name + ".lock")):
                entries, corrupt = self._read()
                if corrupt:
                    os.replace(self.path, self.path.with_name(self.path.name + ".corrupt"))
                entry = entries.setdefault(base_url, {}).setdefault(model, {})
                entry.update({kind: mode, f"{kind}_because": because[:500],
                              "updated": datetime.now(UTC).isoformat(timespec="seconds")})
                _write_atomic(self.path, json.dumps(entries, indent=2, sort_keys=True) + "\n")
        except OSError as exc:
            _log.warning("could not remember the negotiated %s mode in %s: %s", kind, self.path, exc)

    def _read(self) -> tuple[Entries, bool]:
        """The entries, and whether the file exists but is not a valid store (corrupt)."""
        if self.path is None:
            return {}, False
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}, False
        except OSError as exc:
            _log.warning("ignoring %s (unreadable: %s); formats are negotiated again", self.path, exc)
            return {}, False
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            data, why = None, f"not JSON: {exc}"
        else:
            why = "not a {base_url: {model: entry}} object"
        if _valid(data):
            return data, False
        _log.warning("ignoring %s (%s); formats are negotiated again", self.path, why)
        return {}, True


def _valid(data: object) -> bool:
    return isinstance(data, dict) and all(
        isinstance(models, dict) and all(isinstance(e, dict) and all(isinstance(v, str) for v in e.values())
                                         for e in models.values())
        for models in data.values())


@contextlib.contextmanager
def _locked(lock_path: Path):
    with open(lock_path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
