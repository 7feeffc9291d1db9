"""Read a run's graph back from the Prefect API, as the UI does.

Each xdist worker runs its tests one at a time against a Prefect server of its own
(tests/shared_servers.py), so the newest ``artoo-task`` run is the one a test just made;
its descendants are found through the API's parent-flow-run filter, level by level.
"""

from __future__ import annotations

from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    FlowFilter,
    FlowFilterName,
    FlowRunFilter,
    FlowRunFilterParentFlowRunId,
)
from prefect.client.schemas.sorting import FlowRunSort


def latest_task_run():
    """The newest flow run of the artoo-task flow."""
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["artoo-task"])),
                                     sort=FlowRunSort.START_TIME_DESC, limit=1)
    assert runs, "no artoo-task flow run recorded by the API"
    return runs[0]


def descendants(root_id) -> list:
    """Every subflow run below a flow run."""
    found, frontier = [], [root_id]
    with get_client(sync_client=True) as client:
        while frontier:
            children = client.read_flow_runs(
                flow_run_filter=FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=frontier)),
                limit=200, sort=FlowRunSort.START_TIME_ASC)
            found.extend(children)
            frontier = [c.id for c in children]
    return found


def subflow_names(task_id: str | None = None) -> set[str]:
    """Names of all subflow runs of the newest artoo-task run."""
    return {run.name for run in descendants(latest_task_run().id)}


def flow_runs_named(task_id: str | None, prefix: str) -> list:
    """Subflow runs of the newest artoo-task run whose name starts with ``prefix``."""
    return sorted((r for r in descendants(latest_task_run().id) if r.name.startswith(prefix)), key=lambda r: r.name)


def artifact_versions(api_url: str, key: str, flow_run_id) -> list:
    """Every version of the artifact ``key`` written by one flow run, oldest first (raw HTTP, as the UI reads)."""
    import httpx

    body = {"artifacts": {"key": {"any_": [key]}, "flow_run_id": {"any_": [str(flow_run_id)]}},
            "sort": "CREATED_DESC", "limit": 200}
    found = httpx.post(f"{api_url}/artifacts/filter", json=body, timeout=10).raise_for_status().json()
    return list(reversed(found))
