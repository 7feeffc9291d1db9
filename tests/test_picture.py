"""The loss picture is well-formed SVG (a line per series, each round's directive); the run form is titled."""

from __future__ import annotations

import base64
import re
import xml.etree.ElementTree as ET

import pytest

from artoo.tasks.ggs.picture import data_uri, trajectory_markdown, trajectory_svg

NS = "{http://www.w3.org/2000/svg}"
ROWS = [{"round": 1, "D": 1.0, "P": 0.0, "Omega": 0.01, "L": 0.6, "grad_l": 0.0, "state": "change_path"},
        {"round": 2, "D": 0.0, "P": 0.0, "Omega": 0.2, "L": 0.08, "grad_l": -0.52, "state": "accept"}]


@pytest.mark.parametrize(("rows", "lines", "dots"), [(ROWS, 4, 8), (ROWS[:1], 0, 4), ([], 0, 0)])
def test_the_svg_has_a_line_per_series_and_a_dot_per_value(rows, lines, dots):
    root = ET.fromstring(trajectory_svg(rows))
    assert root.tag == f"{NS}svg" and int(root.get("width")) > 0
    assert len(root.findall(f"{NS}polyline")) == lines
    assert len(root.findall(f"{NS}circle")) == dots
    labels = [t.text for t in root.findall(f"{NS}text")]
    assert [s for s in ("change_path", "accept") if s in labels] == [r["state"] for r in rows]
    assert {"L", "D", "P", "Ω"} <= set(labels)


def test_values_map_into_the_plot_higher_is_higher():
    root = ET.fromstring(trajectory_svg(ROWS))
    first = root.findall(f"{NS}polyline")[0].get("points").split()  # L: 0.6 then 0.08
    (_, y1), (_, y2) = (map(float, p.split(",")) for p in first)
    assert y1 < y2  # SVG y grows downwards: the larger loss is drawn higher


def test_the_markdown_embeds_the_picture_as_a_data_uri_and_escapes_text():
    md = trajectory_markdown("t<1>", ROWS)
    uri = re.search(r"\]\((data:image/svg\+xml;base64,[A-Za-z0-9+/=]+)\)", md).group(1)
    assert uri == data_uri(trajectory_svg(ROWS))
    ET.fromstring(base64.b64decode(uri.split(",", 1)[1]))
    assert "| 2 | accept | 0.080 |" in md
    ET.fromstring(trajectory_svg([{"round": 1, "state": "<&>", "L": 1}], title="a & b"))


def test_the_artoo_task_run_form_has_titles_and_help():
    from artoo.config.settings import load_settings
    from artoo.flows.deployments import runner_deployments

    task = next(d for d in runner_deployments(load_settings()) if d.name == "artoo-task")
    schema = task._parameter_openapi_schema.model_dump()["properties"]
    assert (schema["request"]["title"], schema["workspace"]["title"]) == ("Request", "Workspace")
    assert "plain words" in schema["request"]["description"]
    assert "ARTOO_WORKSPACE" in schema["workspace"]["description"]
