"""The endpoint profiles one home keeps, in ``$ARTOO_HOME/llm/negotiated.json`` under a file lock.

Why its own module: it is the only part of the profile that touches the disk (a sidecar ``flock``, atomic
replaces, a corrupt file set aside), so that a refused form costs one request, once, across processes and
concurrent runs on one home; entries are read as earlier releases wrote them.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from artoo.tasks.llm.capability import EndpointProfile

__all__ = ["ProfileStore", "store_path"]

_log = logging.getLogger("artoo.llm")


# ---- the store: $ARTOO_HOME/llm/negotiated.json --------------------------------------------------------------
#
# One small JSON file keyed by base URL then model, each entry the profile's fields::
#
#     {"http://127.0.0.1:8080/v1": {"qwen": {"structured": "json_object_schema",
#                                           "structured_because": "HTTP 500: …",
#                                           "tools": "native", "tools_because": "accepted",
#                                           "window": {"tokens": 4096, "source": "server …/props n_ctx"}, …,
#                                           "updated": "2026-11-24T19:52:03+00:00"}}}
#
# Writes are read-modify-write of the fields that changed, under an exclusive ``flock`` of a sidecar lock file,
# and land with ``os.replace`` (atomic), so concurrent runs on one home neither corrupt the file nor drop each
# other's entries, and readers never see half a file.  A corrupt or unreadable file is ignored with a warning
# (the probe simply happens again); before the next write replaces it, its bytes are kept beside it as
# ``negotiated.json.corrupt``.  Nothing here is ever fatal to a run.

Entries = dict[str, dict[str, dict[str, Any]]]


def store_path(home: Path) -> Path:
    """Where a home keeps its endpoint profiles (the name earlier releases gave their negotiated forms)."""
    return home / "llm" / "negotiated.json"


class ProfileStore:
    """The endpoint profiles of one ARTOO_HOME; ``path`` None remembers nothing."""

    def __init__(self, path: Path | None):
        self.path = path

    def entries(self) -> Entries:
        """Every stored entry as written: {base_url: {model: entry}}; {} when missing or unreadable."""
        entries, _ = self._read()
        return entries

    def get(self, base_url: str, model: str) -> dict[str, Any]:
        """The stored entry of one endpoint and model, as written ({} when none)."""
        return dict(self.entries().get(base_url, {}).get(model, {}))

    def profile(self, base_url: str, model: str) -> EndpointProfile:
        """The profile of one endpoint and model (the defaults when nothing is stored)."""
        return EndpointProfile.from_stored(base_url, model, self.get(base_url, model))

    def profiles(self) -> list[EndpointProfile]:
        """Every stored profile, by base URL then model."""
        return [EndpointProfile.from_stored(base_url, model, entry)
                for base_url, models in sorted(self.entries().items()) for model, entry in sorted(models.items())]

    def remember(self, base_url: str, model: str, kind: str, mode: str, because: str) -> None:
        """Record that ``kind`` ("structured", "tools" or "turn") uses ``mode`` on this endpoint, and why."""
        self.update(base_url, model, {kind: mode, f"{kind}_because": because[:500]})

    def update(self, base_url: str, model: str, fields: dict[str, Any]) -> None:
        """Write ``fields`` into one endpoint's entry (an object field is merged key by key), keeping the rest."""
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _locked(self.path.with_name(self.path.name + ".lock")):
                entries, corrupt = self._read()
                if corrupt:
                    os.replace(self.path, self.path.with_name(self.path.name + ".corrupt"))
                entry = entries.setdefault(base_url, {}).setdefault(model, {})
                for key, value in fields.items():
                    old = entry.get(key)
                    entry[key] = {**old, **value} if isinstance(old, dict) and isinstance(value, dict) else value
                entry["updated"] = datetime.now(UTC).isoformat(timespec="seconds")
                _write_atomic(self.path, json.dumps(entries, indent=2, sort_keys=True) + "\n")
        except OSError as exc:
            _log.warning("could not remember %s of %s in %s: %s", ", ".join(fields), base_url, self.path, exc)

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
        isinstance(models, dict) and all(isinstance(entry, dict) for entry in models.values())
        for models in data.values())


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
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
