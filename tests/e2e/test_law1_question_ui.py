"""The Law-1 question in the Prefect UI, as a person meets it (headless Debian Chromium).

The run a person watches is the top-level ``artoo · <request>`` run; the question waits on
a nested subtask run.  From the top-level run's page one click on the link its log shows
leads to the waiting form, which lists the exact change set.  Screenshots of both pages are
saved under test-output/e2e/.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest

from artoo.tasks.tools import overlay, sandbox
from tests.e2e.helpers import CHROMIUM, OUTPUT, browser_page
from tests.run_graph import latest_task_run
from tests.scenario_kit import done
from tests.test_law1_effect_stories import cleanup_scenario, populate
from tests.test_law1_resume import wait_for_pause

pytestmark = [pytest.mark.usefixtures("prefect_api"),
              pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed"),
              pytest.mark.skipif(sandbox.find_bwrap() is None or overlay.overlay_problem() is not None,
                                 reason="Law 1 by effect needs bubblewrap and overlayfs")]


def test_the_question_is_one_click_from_the_top_level_run(prefect_api: str, scripted, artoo_env: Path,
                                                          monkeypatch) -> None:
    from prefect.flow_runs import resume_flow_run

    from artoo.flows.task_flow import artoo_task

    monkeypatch.setenv("ARTOO_LAW1_MODE", "pause")
    monkeypatch.setenv("ARTOO_GGS__MAX_REPLANS", "0")
    workspace = artoo_env / "workspace"
    populate(workspace)
    scenario = cleanup_scenario("bash", approved=False)
    scenario["answers"]["tools"].append(done("could not clean up"))
    scripted(scenario)
    thread = threading.Thread(target=lambda: asyncio.run(artoo_task(request="clean up the workspace")))
    thread.start()
    paused = wait_for_pause(thread)
    top = latest_task_run()
    ui = prefect_api.removesuffix("/api")
    OUTPUT.mkdir(parents=True, exist_ok=True)
    deleted = f"deleted {os.path.realpath(workspace)}/keep.txt (7 B)"
    try:
        with browser_page() as page:
            page.goto(f"{ui}/runs/flow-run/{top.id}", wait_until="networkidle")
            link = page.locator(f"a[href*='/runs/flow-run/{paused.id}']").first
            link.wait_for(state="visible", timeout=30_000)
            top_shot = OUTPUT / "law1-top-level-run.png"
            page.screenshot(path=str(top_shot), full_page=True)
            link.click()
            page.wait_for_url(f"**/runs/flow-run/{paused.id}**", timeout=20_000)
            page.get_by_role("button", name="Resume").first.click()  # the paused run's form
            page.get_by_text(deleted).first.wait_for(state="visible", timeout=30_000)
            form_shot = OUTPUT / "law1-question.png"
            page.screenshot(path=str(form_shot), full_page=True)
    finally:
        resume_flow_run(paused.id, run_input={"approve": False})
        thread.join(timeout=90)
    assert (workspace / "keep.txt").read_text() == "keep me"
    print(f"\nscreenshots: {top_shot} {form_shot}")
    assert top_shot.stat().st_size > 10_000 and form_shot.stat().st_size > 10_000
