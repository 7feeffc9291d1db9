"""The run's page shows the loss trajectory as a picture, the final artifact the cost table (headless Chromium).

An abandoned story on the session's Prefect server: round 1 fails logically, the replan budget
(one) is spent in round 2, so the run also makes its one LLM-written failure report.  The test
reads the artifacts back from the API, then opens the loss artifact in the Prefect UI in Debian's
Chromium and checks that the image actually loaded (a non-zero natural size), saving a screenshot.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import final_from, run_cli
from tests.e2e.helpers import OUTPUT, api, artifact, browser_page
from tests.scenario_kit import agent, done, plan, requests_by_schema, scenario, spec, subtask, verdict

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_api")]
CRIT = "the answer is 42"


def test_the_loss_picture_renders_and_the_final_artifact_carries_the_cost(scripted, prefect_api: str,
                                                                          monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ARTOO_GGS__MAX_REPLANS", "1")
    server = scripted(scenario(
        TaskSpec=[spec("picture_story", "find the answer")],
        Plan=[plan([subtask(f"attempt {i}", [CRIT])], ["the answer is reported"]) for i in range(2)],
        tools=[done("I cannot", status="failed") for _ in range(2)],
        AgentVerdict=[agent(verdict(CRIT, False, "logical")) for _ in range(2)],
        FailureReport=[{"answer": {"achieved": "nothing", "blocked_by": "no method worked",
                                   "try_next": ["say where the answer is"]}}],
    ))
    code, out, _ = run_cli("run", "--json", "find the answer")
    final = final_from(out)
    assert (code, final["directive"], final["replans"]) == (1, "abandon", 1)
    assert requests_by_schema(server)["FailureReport"] == 1
    with api(prefect_api) as client:
        loss, result = artifact(client, "loss-picture-story"), artifact(client, "final-picture-story")
    assert loss is not None and "data:image/svg+xml;base64," in loss.data
    assert "## Cost by role" in result.data and "| R2 | 3 |" in result.data  # two plans and the report
    assert "Failure report (R2, on abandon): 1 call" in result.data
    ui = prefect_api.removesuffix("/api")
    OUTPUT.mkdir(parents=True, exist_ok=True)
    shot = OUTPUT / "loss-picture.png"
    with browser_page() as page:
        page.goto(f"{ui}/artifacts/artifact/{loss.id}", wait_until="networkidle")
        image = page.locator("img[alt^='GGS loss trajectory']").first
        image.wait_for(state="visible", timeout=30_000)
        page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image.element_handle(),
                               timeout=15_000)
        width, height = image.evaluate("img => [img.naturalWidth, img.naturalHeight]")
        image.scroll_into_view_if_needed()
        page.screenshot(path=str(shot), full_page=True)
    print(f"\nscreenshot: {shot}")
    assert width > 0 and height > 0
    assert Path(shot).stat().st_size > 10_000
