"""#25's count-lines request against a real OpenAI-compatible endpoint: runs only when ``ARTOO_TEST_ENDPOINT``
is set (a base URL such as ``http://127.0.0.1:8080/v1``; ``ARTOO_TEST_MODEL`` names the model, else the
first one ``/v1/models`` lists).  CI never sets it: a local CPU model takes minutes, and its answers vary.

What it holds a real model to is what artoo promises whatever the model does: the run ends (exit 0 or 1,
never a crash or a configuration error), no LLM call ends it on a format deviation, the decision log says
which request forms were negotiated, and an exit 0 is never a false accept: totals.md then holds every
file's name and count and the total, in any layout.  Whether a small model succeeds is measured in
bench/README, not asserted here.
"""

from __future__ import annotations

import json
import os
import re
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import final_from, run_cli

ENDPOINT = os.environ.get("ARTOO_TEST_ENDPOINT")
REQUEST = "count the lines of every .txt file in this folder and write the totals to totals.md"
pytestmark = pytest.mark.skipif(not ENDPOINT, reason="ARTOO_TEST_ENDPOINT is not set (a live model endpoint)")


def _model() -> str:
    named = os.environ.get("ARTOO_TEST_MODEL")
    if named:
        return named
    with urllib.request.urlopen(f"{ENDPOINT.rstrip('/')}/models", timeout=10) as answer:  # noqa: S310 - the tester's URL
        return json.load(answer)["data"][0]["id"]


@pytest.mark.usefixtures("prefect_api")
def test_count_lines_against_a_live_model_ends_honestly(artoo_env: Path, monkeypatch):
    from artoo.config.settings import load_settings
    from artoo.tasks.decisions.log import load_run

    folder = artoo_env / "workspace"
    folder.mkdir()
    for name, text in {"a.txt": "alpha\nbeta\ngamma\n", "b.txt": "1\n2\n3\n4\n5\n", "c.txt": "one\n"}.items():
        (folder / name).write_text(text)
    for key, value in {"OPENAI_BASE_URL": ENDPOINT, "OPENAI_MODEL": _model(), "OPENAI_API_KEY": "local",
                       "ARTOO_LLM__TEMPERATURE": "0.2", "ARTOO_LLM__MAX_TOKENS": "1024",
                       "ARTOO_GGS__TIME_BUDGET_MS": "1800000", "ARTOO_LLM__CONTENT_PROBE": "true",
                       "ARTOO_LLM__REJUDGE_UNGROUNDED": "true"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("ARTOO_LLM_TIMEOUT_S", raising=False)  # the tiers' own timeouts, made for CPU models
    code, out, _ = run_cli("run", "--json", "--workspace", str(folder), REQUEST)
    final = final_from(out)
    assert code in (0, 1), out
    _, records = load_run(load_settings().home_dir)
    calls = [r for r in records if r["kind"] == "llm"]
    assert calls and all(r.get("negotiated") for r in calls)  # each call says the forms it was sent in
    assert not [r for r in calls if "invalid" in str(r.get("error") or "") and "twice" in str(r.get("error"))]
    if code == 0:
        assert final["directive"] == "accept"
        written = (folder / "totals.md").read_text()  # any layout, but every file's count and the total
        assert all(part in written for part in ("a.txt", "b.txt", "c.txt")), written
        assert {"3", "5", "1", "9"} <= set(re.findall(r"\d+", written)), written
