"""A whole real run replayed: run t10 of #25, the first that Qwen2.5-Coder-1.5B (llama-server) carried to
the end, served again answer by answer to a real ``artoo run`` with real tools in a fresh folder.

Run t10 ended **accepted with a wrong totals.md** ("18": the plan's awk also summed ``wc -l``'s own
"total" line; the right total is 9): R4a passed step 2 quoting the executor's own sentence ("totals.md
exists and holds the total number of lines …") while the file it was shown held 18.  Replayed now, every
real answer still reaches its role in order and the tools run for real, but that pass is failed by code
(``agent_validator.grounded``: the evidence is the claim), so artoo no longer exits 0 with the wrong file.
Step 1's pass, which quoted the file as code read it, stands.  The transcript has no answers beyond the
real run's, so what follows the caught pass is the scripted server running out: the run ends abandoned.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from artoo.tasks.llm.profile_store import ProfileStore, store_path
from artoo.tasks.llm.testing.transcript import scenario_from_transcript
from artoo.timeline import render
from tests.conftest import final_from, run_cli

T10 = Path(__file__).parent / "transcripts" / "llama-server-count-lines-6.jsonl"
REQUEST = "count the lines of every .txt file in this folder and write the totals to totals.md"


def three_files(artoo_env: Path) -> Path:
    """The folder every count-lines try ran in: a.txt (3 lines), b.txt (5) and c.txt (1)."""
    folder = artoo_env / "workspace"
    folder.mkdir()
    for name, text in {"a.txt": "alpha\nbeta\ngamma\n", "b.txt": "1\n2\n3\n4\n5\n", "c.txt": "one\n"}.items():
        (folder / name).write_text(text)
    return folder


RIGHT = ["3", "a.txt", "5", "b.txt", "1", "c.txt", "9", "total"]
"""totals.md as ``wc -l *.txt > totals.md`` writes it in the three files' folder (split into words)."""


def replay_fresh(scripted, monkeypatch, transcript: Path, rejudge: bool = True):
    """A run recorded from a fresh home, replayed as it ran: the content probe on, the validators' re-ask as
    given (tests/conftest.py turns both off for scripted stories).  Returns the server, exit code and final."""
    monkeypatch.setenv("ARTOO_LLM__CONTENT_PROBE", "true")
    monkeypatch.setenv("ARTOO_LLM__REJUDGE_UNGROUNDED", "true" if rejudge else "false")
    server = scripted(scenario_from_transcript(transcript).model_dump())
    code, out, _ = run_cli("run", "--json", REQUEST)
    return server, code, final_from(out)


@pytest.mark.usefixtures("prefect_api")
def test_run_t10_replayed_ends_as_it_did_with_every_tool_run_for_real(scripted, artoo_env):
    from artoo.config.settings import load_settings
    from artoo.tasks.decisions.log import load_run

    folder = three_files(artoo_env)
    server = scripted(scenario_from_transcript(T10).model_dump())
    ProfileStore(store_path(load_settings().home_dir)).remember(
        server.base_url, "scripted", "tools", "content", "t10's home remembered the content protocol")
    code, out, _ = run_cli("run", "--json", REQUEST)
    assert (code, final_from(out)["directive"]) == (1, "abandon")  # t10 exited 0 with this very totals.md
    assert (folder / "line_counts.txt").read_text().split() == ["3", "a.txt", "5", "b.txt", "1", "c.txt", "9", "total"]
    assert (folder / "totals.md").read_text() == "18\n"
    real = [e["schema"] for e in server.requests if e["status"] == 200]
    assert real[:8] == ["TaskSpec", "Plan", "tools", "tools", "AgentVerdict", "tools", "tools", "AgentVerdict"]
    turns = [e["body"]["response_format"]["json_schema"]["name"] for e in server.requests[:8] if e["schema"] == "tools"]
    assert turns == ["ExecutorTurn"] * 4
    _, records = load_run(load_settings().home_dir)
    messages = [r.get("payload") or {} for r in records if r["kind"] == "message"]
    step1 = next(m for m in messages if "gap_trajectory" in m)
    assert step1["status"] == "matched" and step1["criteria_verdicts"][0]["verdict"] == "pass"
    (overrule,) = [r for r in records if r["kind"] == "grounded"]  # R4a said pass; code says why not
    (caught,) = overrule["verdicts"]
    assert (overrule["attempt"], caught["verdict"]) == (1, "fail")
    assert caught["evidence"].startswith("the evidence is the executor's own claim")
    shown = "\n".join(render(records))  # `artoo log` says so where R4a's answer is
    assert "R4a's pass failed by code (Law 0, attempt 1): totals.md exists and holds" in shown
    calls = [r for r in records if r["kind"] == "llm" and r["ok"]]
    assert not any(r.get("repairs") for r in calls)  # real answers under the schemas: no repair


T14 = Path(__file__).parent / "transcripts" / "llama-server-count-lines-8.jsonl"


@pytest.mark.usefixtures("prefect_api")
def test_run_t14_replayed_no_longer_accepts_a_file_never_written(scripted, artoo_env):
    """Run t14 exited 0 with no totals.md: step 2 ("sum the lines and write the total to totals.md") called
    ``glob`` only and said "the total number of lines is calculated correctly"; R4a passed its criterion,
    which names no file, quoting that sentence, and R4b passed "totals.md holds …" quoting it again.
    Replayed, R4a's pass is failed by code (the step's intent names totals.md, the evidence is the claim),
    so the run can no longer accept; R4b's half of the fix is tested on its real answer in
    test_roles_meta_validator (this replay never reaches it)."""
    from artoo.config.settings import load_settings
    from artoo.tasks.decisions.log import load_run

    folder = three_files(artoo_env)
    server = scripted(scenario_from_transcript(T14).model_dump())
    code, out, _ = run_cli("run", "--json", REQUEST)
    assert code != 0 and final_from(out)["directive"] != "accept"  # t14 exited 0 here
    assert not (folder / "totals.md").exists()
    real = [e["schema"] for e in server.requests if e["status"] == 200]
    assert real[:8] == ["TaskSpec", "Plan", "tools", "tools", "AgentVerdict", "tools", "tools", "AgentVerdict"]
    _, records = load_run(load_settings().home_dir)
    (overrule,) = [r for r in records if r["kind"] == "grounded"]
    (caught,) = overrule["verdicts"]
    assert (overrule["attempt"], caught["criterion"]) == (1, "The total number of lines is calculated correctly")
    assert caught["evidence"].startswith("the evidence is the executor's own claim")
    assert "R4a's pass failed by code (Law 0, attempt 1): The total number" in "\n".join(render(records))


T16 = Path(__file__).parent / "transcripts" / "llama-server-count-lines-9.jsonl"


@pytest.mark.usefixtures("prefect_api")
def test_run_t16_replayed_r4b_passes_failed_by_code_and_the_run_abandons(scripted, artoo_env, monkeypatch):
    """Run t16, the first with R4b grounded by code, replayed whole: 4 rounds, 37 real exchanges.  In round 2
    R4b passed "totals.md contains the total number of lines …" when no totals.md existed (t14's false
    accept again); code failed it, and in rounds 3 and 4 it failed R4b's passes that quoted the executor's
    sentence over a wrong totals.md.  The run abandons (exit 1) as it did, never accepting."""
    from artoo.config.settings import load_settings
    from artoo.tasks.decisions.log import load_run

    monkeypatch.setenv("ARTOO_GGS__MAX_CALLS", "60")  # the recorded run made more calls than today's budget allows
    folder = three_files(artoo_env)
    server = scripted(scenario_from_transcript(T16).model_dump())
    ProfileStore(store_path(load_settings().home_dir)).remember(
        server.base_url, "scripted", "tools", "content", "t16's home remembered the content protocol")
    code, out, _ = run_cli("run", "--json", REQUEST)
    assert (code, final_from(out)["directive"]) == (1, "abandon")
    assert [e["schema"] for e in server.requests if e["status"] == 200].count("TaskVerdict") == 3
    _, records = load_run(load_settings().home_dir)
    r4b = [(r["round"], r["verdicts"][0]["evidence"].split(":")[0]) for r in records
           if r["kind"] == "grounded" and r.get("role") == "R4b"]
    assert [n for n, _ in r4b] == [2, 3, 4]
    assert r4b[0][1].startswith("totals.md does not exist (code looked after the work; it did not exist before")
    assert all(why.startswith("the evidence is the executor's own claim") for _, why in r4b[1:])  # said back
    assert sum(1 for r in records if r["kind"] == "grounded" and r.get("role") != "R4b") == 2  # R4a's, round 2
    assert "R4b's pass failed by code (Law 0, round 2): totals.md contains" in "\n".join(render(records))
    assert (folder / "totals.md").read_text().split() == ["3", "5", "1", "1", "10"]  # round 4's, as in t16


T19 = Path(__file__).parent / "transcripts" / "llama-server-count-lines-10.jsonl"


@pytest.mark.usefixtures("prefect_api")
def test_run_t19_replayed_the_placeholder_written_blind_is_not_run(scripted, artoo_env):
    """Run t19 asked for ``glob``, ``wc -l *.txt`` and ``write_file totals.md "{{ total_lines }}"`` in one
    turn: the write was composed before the counts came back, and totals.md held the placeholder.  Replayed,
    the write is not run and the model is told why; its next real answer ("the total number of lines is
    written to totals.md") is then a claim over a file that does not exist, and code fails R4a's pass."""
    from artoo.config.settings import load_settings
    from artoo.tasks.decisions.log import load_run

    folder = three_files(artoo_env)
    server = scripted(scenario_from_transcript(T19).model_dump())
    ProfileStore(store_path(load_settings().home_dir)).remember(
        server.base_url, "scripted", "tools", "content", "t19's home remembered the content protocol")
    code, out, _ = run_cli("run", "--json", REQUEST)
    assert code != 0 and final_from(out)["directive"] != "accept"
    assert not (folder / "totals.md").exists() or "{{" not in (folder / "totals.md").read_text()
    turns = [e["body"]["messages"] for e in server.requests if e["schema"] == "tools"]
    held = str(turns[1][-1]["content"])
    assert "write_file status: not run" in held and "before its output came back" in held
    _, records = load_run(load_settings().home_dir)
    first = next(r for r in records if r["kind"] == "grounded")
    assert (first.get("role", "R4a"), first["attempt"]) == ("R4a", 1)
    assert first["verdicts"][0]["evidence"].startswith("totals.md does not exist")


T21 = Path(__file__).parent / "transcripts" / "llama-server-count-lines-11.jsonl"


@pytest.mark.usefixtures("prefect_api")
def test_run_t21_replayed_the_blind_rewrite_is_not_run_and_the_kept_file_stands(scripted, artoo_env):
    """Run t21 accepted in round 2 (exit 0) with totals.md as round 1 wrote it, "9 total" (the grand total
    only).  Round 2's turn asked for ``write_file totals.md "Total lines: $(cat *.txt | wc -l)"`` beside the
    ``wc`` it needed: not run, so the file was not overwritten with a literal shell expansion."""
    from artoo.config.settings import load_settings
    from artoo.tasks.decisions.log import load_run

    folder = three_files(artoo_env)
    server = scripted(scenario_from_transcript(T21).model_dump())
    ProfileStore(store_path(load_settings().home_dir)).remember(
        server.base_url, "scripted", "tools", "content", "t21's home remembered the content protocol")
    code, out, _ = run_cli("run", "--json", REQUEST)
    assert (code, final_from(out)["directive"], final_from(out)["replans"]) == (0, "accept", 1)
    assert (folder / "totals.md").read_text() == "9 total\n"
    turns = [e["body"]["messages"] for e in server.requests if e["schema"] == "tools"]
    assert "write_file status: not run" in str(turns[-1][-1]["content"])  # round 2's last turn saw why
    _, records = load_run(load_settings().home_dir)
    (r4b,) = [r for r in records if r["kind"] == "grounded"]  # round 1's R4b echo; round 2's file quote stands
    assert (r4b["role"], r4b["round"]) == ("R4b", 1)
    assert server.unused() == {}


T30 = Path(__file__).parent / "transcripts" / "llama-server-count-lines-12.jsonl"


@pytest.mark.usefixtures("prefect_api")
def test_run_t30_replayed_a_literal_shell_substitution_is_not_accepted(scripted, artoo_env, monkeypatch):
    """Run t30 exited 0 in round 3 with totals.md holding ``Total lines: $(cat *.txt | wc -l)``: the model's
    ``write_file`` ran (the tool said it wrote the text literally), R4a passed quoting ``wc``'s output and
    R4b quoting the file.  Replayed, code fails R4a's pass (``grounding.unrun``) and the run is not accepted.
    Rounds 1 and 2 asked for the same ``glob``/``locate`` three times per attempt: each turn after a repeat
    was offered every tool but the repeated one."""
    from artoo.config.settings import load_settings
    from artoo.tasks.decisions.log import load_run

    monkeypatch.setenv("ARTOO_GGS__MAX_CALLS", "60")  # the recorded run made more calls than today's budget allows
    folder = three_files(artoo_env)
    server = scripted(scenario_from_transcript(T30).model_dump())
    ProfileStore(store_path(load_settings().home_dir)).remember(
        server.base_url, "scripted", "tools", "content", "t30's home was seeded with the content protocol")
    code, out, _ = run_cli("run", "--json", REQUEST)
    assert code != 0 and final_from(out)["directive"] != "accept"  # t30 exited 0 here
    assert (folder / "totals.md").read_text() == "Total lines: $(cat *.txt | wc -l)"
    turns = [e["body"] for e in server.requests if e["schema"] == "tools"]
    offered = [sorted(c["properties"]["name"]["enum"][0] for c in
                      t["response_format"]["json_schema"]["schema"]["anyOf"][0]["properties"]["tool_calls"]
                      ["items"]["anyOf"]) for t in turns[:3]]
    assert "glob" in offered[0] and "glob" in offered[1] and "glob" not in offered[2]
    _, records = load_run(load_settings().home_dir)
    caught = [v for r in records if r["kind"] == "grounded" for v in r["verdicts"]]
    assert any(v["evidence"].startswith("totals.md holds '$(cat *.txt | wc -l)' as text") for v in caught)


T35 = Path(__file__).parent / "transcripts" / "llama-server-count-lines-14.jsonl"


@pytest.mark.usefixtures("prefect_api")
def test_run_t35_replayed_a_fresh_home_probes_moves_to_content_and_accepts_the_right_file(scripted, artoo_env,
                                                                                        monkeypatch):
    """Run t35, a new user's first run (no remembered modes): R3's first turn under native tools answered a
    final result with invented counts; the content probe asked the same turn in the content protocol, which
    called ``glob`` and ``wc -l *.txt > totals.md``; R4a passed on that call, R4b quoting the file as code read
    it.  Exit 0, totals.md right, in 221 s.  Replayed with the probe on, the same eight answers make the same
    run; with it off (its fix reverted) the answers fall out of step and the replay ends abandoned after 3
    replans (checked by hand: exit 1)."""
    from artoo.config.settings import load_settings
    from artoo.tasks.decisions.log import load_run

    folder = three_files(artoo_env)
    server, code, final = replay_fresh(scripted, monkeypatch, T35, rejudge=False)  # t35 ran before the re-ask
    assert (code, final["directive"], final["replans"]) == (0, "accept", 0)
    assert (folder / "totals.md").read_text().split() == RIGHT
    tools = [e["body"] for e in server.requests if e["schema"] == "tools"]
    assert [bool(t.get("tools")) for t in tools] == [True, False, False]  # native, the probe, content
    stored = ProfileStore(store_path(load_settings().home_dir)).get(server.base_url, "scripted")
    assert stored["tools"] == "content" and stored["tools_because"].startswith("behaviour: an executor's first")
    _, records = load_run(load_settings().home_dir)
    assert not [r for r in records if r["kind"] == "grounded"]  # both passes rest on what code recorded
    shown = "\n".join(render(records))
    assert "tools mode content" in shown and "$ shell: wc -l *.txt > totals.md" in shown


P4 = Path(__file__).parent / "transcripts" / "llama-cpp-python-count-lines-4.jsonl"


@pytest.mark.usefixtures("prefect_api")
def test_run_p4_replayed_both_validators_re_asked_quote_the_file_and_the_run_accepts(scripted, artoo_env,
                                                                                    monkeypatch):
    """Run p4, llama-cpp-python from a fresh home: its HTTP 500 on ``json_schema`` (→ ``json_object`` + schema),
    the probe's move to content, ``glob`` then ``wc -l *.txt > totals.md``; R4a and R4b each passed on the
    criterion said back (turned by code), and **asked once more without the executors' words, each quoted
    totals.md as code read it**.  Exit 0, totals.md right, in 328 s.  Replayed with both fixes on, the same run;
    with the re-ask off (its fix reverted) the turned passes stand as fails and the run is not accepted."""
    from artoo.config.settings import load_settings
    from artoo.tasks.decisions.log import load_run

    folder = three_files(artoo_env)
    server, code, final = replay_fresh(scripted, monkeypatch, P4)
    assert (code, final["directive"], final["replans"]) == (0, "accept", 0)
    assert (folder / "totals.md").read_text().split() == RIGHT
    _, records = load_run(load_settings().home_dir)
    turned = [(r["role"], r.get("rejudged", False)) for r in records if r["kind"] == "grounded"]
    assert turned == [("R4a", False), ("R4b", False)]  # each turned once; neither re-ask was turned
    asked = [r for r in records if r["kind"] == "verdict"]
    assert [(r["role"], r.get("rejudged", False)) for r in asked] == [
        ("R4a", False), ("R4a", True), ("R4b", False), ("R4b", True)]
    assert all("9 total" in v["evidence"] for r in asked if r.get("rejudged") for v in r["answer"]["verdicts"])
    assert [e["status"] for e in server.requests if e["status"] != 200] == [500]  # json_schema refused once


T39 = Path(__file__).parent / "transcripts" / "llama-server-count-lines-15.jsonl"


@pytest.mark.usefixtures("prefect_api")
def test_run_t39_replayed_a_pass_quoting_codes_objection_is_not_accepted(scripted, artoo_env, monkeypatch):
    """Run t39 exited 0 with a by-product counted in: step 1 wrote ``wc -l *.txt > line_counts.txt``, step 2
    ``wc -l *.txt > totals.md`` (13 total, line_counts.txt among the files); R4a, re-asked after code turned
    its pass on step 2, answered with its claim followed by code's own reason ("… a criterion said back is
    not evidence …") and passed.  Replayed with the probe and the re-ask on, as it ran, that pass is failed by
    code (``grounding.parrots``) and the run is not accepted; with the rule reverted it exits 0."""
    from artoo.config.settings import load_settings
    from artoo.tasks.decisions.log import load_run

    three_files(artoo_env)
    _, code, final = replay_fresh(scripted, monkeypatch, T39)
    assert code != 0 and final["directive"] != "accept"
    _, records = load_run(load_settings().home_dir)
    caught = [v["evidence"] for r in records if r["kind"] == "grounded" and r.get("rejudged") for v in r["verdicts"]]
    assert caught and caught[0].startswith("the evidence repeats code's objection")


ACCEPTANCE = {"t38": "llama-server-count-lines-16.jsonl", "t40": "llama-server-count-lines-17.jsonl",
              "p5": "llama-cpp-python-count-lines-5.jsonl", "p7": "llama-cpp-python-count-lines-6.jsonl"}
"""#25's acceptance tries at one code state (`9f851cd`), each from a fresh home: t38–t40 on llama-server and
p5–p7 on llama-cpp-python; these four exited 0 with the right totals.md (t39 and p6 were false accepts, now
failed by code: the t39 replay above, p6 in tests/test_grounding.py)."""


@pytest.mark.usefixtures("prefect_api")
@pytest.mark.parametrize("name", sorted(ACCEPTANCE))
def test_the_acceptance_tries_replayed_at_todays_code_still_end_right(scripted, artoo_env, monkeypatch, name):
    """The later grounding rules (code's objection parroted, a hand-written count read back) turn none of the
    right runs: each replays to exit 0 with the same totals.md."""
    folder = three_files(artoo_env)
    _, code, final = replay_fresh(scripted, monkeypatch, Path(__file__).parent / "transcripts" / ACCEPTANCE[name])
    assert (code, final["directive"]) == (0, "accept")
    assert (folder / "totals.md").read_text().split() == RIGHT
