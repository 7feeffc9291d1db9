"""One run's decision log as a readable timeline (``artoo log``) and a replay as a side-by-side table.

Pure text rendering over the records of artoo.tasks.decisions.log, so the CLI, the REPL's
``/log`` and the tests read the same story: R1, each round's plan, the subtasks with their
tool calls and verdicts, the GGS line, the FinalResult.  ``full`` adds the complete prompts
and answers of every LLM call.
"""

from __future__ import annotations

import json
from typing import Any

INDENT = "    "


def filter_role(records: list[dict[str, Any]], role: str | None) -> list[dict[str, Any]]:
    """Only LLM calls and verdicts of ``role`` (the run's structure stays); all records when None."""
    if not role:
        return records
    return [r for r in records if r.get("kind") not in ("llm", "verdict") or r.get("role") == role]


def render(records: list[dict[str, Any]], full: bool = False) -> list[str]:
    """The timeline, one line per event (prompts indented below their call when ``full``)."""
    lines: list[str] = []
    for record in records:
        lines.extend(_render(record, full))
    return lines


def _render(r: dict[str, Any], full: bool) -> list[str]:
    kind = r.get("kind")
    if kind == "run":
        return [f"run {r.get('run_id')} · {r.get('t', '')[:19]} · {r.get('request', '')!r}"]
    if kind == "llm":
        return _llm(r, full)
    if kind == "tool":
        return _tool(r)
    if kind == "verdict":
        return _verdict(r)
    if kind == "ggs":
        return [f"  GGS {r.get('log_line', '')}"]
    if kind == "message":
        return _message(r)
    if kind == "grounded":
        where = (f"{INDENT}R4b's pass failed by code (Law 0, round {r.get('round')})" if r.get("role") == "R4b"
                 else f"    R4a's pass failed by code (Law 0, attempt {r.get('attempt')})")
        return [f"{where}: {v.get('criterion')}: {v.get('evidence')}" for v in r.get("verdicts") or []]
    if kind == "check":
        return _check(r)
    if kind == "spec_repair":
        return [f"  R1 answer repaired: {r.get('note', '')}"]
    if kind == "plan_repair":
        return [f"  R2 plan repaired (round {r.get('round')}): {r.get('note', '')}"]
    if kind == "truncated":
        return [f"  … {r.get('reason')}"]
    if kind == "end" and r.get("error"):
        return [f"end: the run did not finish ({r['error']})"]
    if kind == "end":
        cost = r.get("cost", {})
        calls = sum(row.get("calls", 0) for row in cost.values())
        return [f"end: {calls} LLM call(s), wall {r.get('wall_seconds', 0):.2f} s, "
                f"tools {r.get('tool_seconds', 0):.2f} s"]
    return []


def _check(r: dict[str, Any]) -> list[str]:
    """A check code ran: its outcome, what it ran and why; a broken one is said as the plan's defect."""
    depth = INDENT * (2 if str(r.get("label", "")).startswith("attempt") else 1)
    status = r.get("status")
    said = {"met": "met", "unmet": "UNMET", "judge": "left to the judge",
            "broken": "could not run (a plan defect: judged by the model instead)"}.get(status, status)
    return [f"{depth}✓ check {r.get('label')} · {said}: {r.get('criterion')} · `{r.get('command')}` · "
            f"{r.get('reason')}"]


def _llm(r: dict[str, Any], full: bool) -> list[str]:
    depth = INDENT * (2 if r.get("scope", {}).get("subtask") else 1)
    status = "ok" if r.get("ok") else f"FAILED: {r.get('error')}"
    cached = f" ({r['cached_tokens']} cached)" if isinstance(r.get("cached_tokens"), int) else ""
    head = (f"{depth}· {r.get('role')} {r.get('schema')} · {r.get('model')} · {r.get('prompt_tokens', 0)}+"
            f"{r.get('completion_tokens', 0)} tokens{cached} · {r.get('latency_s', 0):.2f} s · {status}{_cuts(r)}"
            f"{_negotiated(r)}")
    repairs = [f"{depth}  repaired ({x.get('kind')}): {x.get('detail')}" for x in r.get("repairs") or []]
    if not full:
        return [head, *repairs]
    lines = [head, *repairs]
    for message in (r.get("request") or {}).get("messages", []):
        lines.append(f"{depth}  [{message.get('role')}]")
        lines.extend(f"{depth}    {line}" for line in _content(message).splitlines() or [""])
    response = r.get("response") or {}
    for choice in response.get("choices", []):
        lines.append(f"{depth}  [answer]")
        lines.extend(f"{depth}    {line}" for line in _content(choice.get("message") or {}).splitlines() or [""])
    return lines


def _cuts(r: dict[str, Any]) -> str:
    """What the prompt budget cut to fit the model's window (artoo.tasks.llm.transport.budget), or nothing."""
    budget = r.get("budget") or {}
    cuts = [f"{c.get('kind')} {c['dropped']} dropped" if "dropped" in c
            else f"{c.get('kind')} {c.get('blocks')} shortened" for c in budget.get("cuts") or []]
    return f" · prompt cut to fit {budget.get('context_tokens')} tokens: {', '.join(cuts)}" if cuts else ""


def _negotiated(r: dict[str, Any]) -> str:
    """The negotiated mode a call was sent in, when it is not the first choice, and a refusal that moved it."""
    modes = r.get("negotiated") or {}
    kind, first = ("tools", "native") if r.get("schema") == "tools" else ("structured", "json_schema")
    shown = [f"{kind} mode {modes[kind]}"] if modes.get(kind) not in (None, first) else []
    if r.get("refused"):
        shown.append(f"{r['refused']} refused: the next request falls back")
    return "".join(f" · {part}" for part in shown)


def _content(message: dict[str, Any]) -> str:
    text = message.get("content")
    if not isinstance(text, str):
        text = json.dumps(text, default=str) if text else ""
    calls = message.get("tool_calls") or []
    for call in calls:
        function = call.get("function") or {}
        text += f"\n→ {function.get('name')}({function.get('arguments')})"
    return text


def _tool(r: dict[str, Any]) -> list[str]:
    args = r.get("arguments") or {}
    shown = next((v for v in args.values() if isinstance(v, str)), json.dumps(args, default=str))
    status = "ok" if r.get("ok") else f"failed ({r.get('failure_class')})"
    exit_code = "" if r.get("exit_code") is None else f" exit {r['exit_code']}"
    first = str(r.get("output", "")).strip().splitlines()
    out = f" → {first[0][:100]}" if first else ""
    change = f" · changed {r['change_set']}" if r.get("change_set") else ""
    return [f"{INDENT * 2}$ {r.get('name')}: {shown[:120]} ·{exit_code} {status}{out}{change}"]


def _verdict(r: dict[str, Any]) -> list[str]:
    answer = r.get("answer") or {}
    where = f" attempt {r['attempt']}" if r.get("attempt") else ""
    depth = INDENT * (2 if r.get("role") == "R4a" else 1)
    lines = [f"{depth}{r.get('role')} verdicts{where}:"]
    for v in answer.get("verdicts", []):
        mark = "PASS" if v.get("verdict") == "pass" else "FAIL"
        cls = f" ({v.get('failure_class')})" if v.get("failure_class") else ""
        lines.append(f"{depth}  {mark} {v.get('criterion')}{cls}")
    return lines


def _message(r: dict[str, Any]) -> list[str]:
    event = str(r.get("event", "")).removeprefix("artoo.")
    p = r.get("payload") or {}
    if event == "task_spec":
        return [f"R1 task {p.get('task_id')}: {p.get('intent')}"]
    if event == "dispatch_manifest":
        return [f"round {p.get('round', r.get('scope', {}).get('round'))}: plan of {len(p.get('subtask_ids', []))} "
                f"subtask(s); task criteria: " + "; ".join(c.get("criterion", "") for c in p.get("task_criteria", []))]
    if event == "subtask":
        criteria = "; ".join(c.get("criterion", "") for c in p.get("success_criteria", []))
        return [f"  subtask {p.get('subtask_id')}: {p.get('intent')} [{criteria}]"]
    if event == "subtask_outcome":
        mark = "✓ matched" if p.get("status") == "matched" else f"✗ {p.get('status')}: {p.get('failure_reason')}"
        return [f"  {p.get('subtask_id')} {mark}"]
    if event == "plan_directive":
        return [f"  → directive {p.get('directive')}: {p.get('rationale')}"]
    if event == "final_result":
        lines = [f"FinalResult: {p.get('directive')} after {p.get('replans')} replan(s): {p.get('summary')}"]
        lines += [f"  next: {step}" for step in p.get("next_steps", [])]
        return lines
    return []


def render_replay(data: dict[str, Any]) -> list[str]:
    """The replay table: round, recorded vs replayed directive, replayed numbers, note; then the outcome."""
    changed = ", ".join(f"ggs.{k}={v}" for k, v in data["changed"].items()) or "the recorded settings"
    lines = [f"replay of {data['task_id']} under {changed}",
             f"{'round':>5}  {'recorded':<16} {'replayed':<16} {'L rec':>6} {'L new':>6} {'D':>5} {'P':>5} "
             f"{'Ω':>5} {'∇L':>6}  note"]
    for row in data["rows"]:
        def num(value: float | None, width: int, signed: bool = False) -> str:
            return f"{'—':>{width}}" if value is None else f"{value:{'+' if signed else ''}{width}.3f}"
        lines.append(f"{row['round']:>5}  {row['recorded']:<16} {row['replayed']:<16} {row['recorded_L']:6.3f} "
                     f"{num(row['replayed_L'], 6)} {num(row['replayed_D'], 5)} {num(row['replayed_P'], 5)} "
                     f"{num(row['replayed_Omega'], 5)} {num(row['replayed_grad_l'], 6, True)}  {row['note']}")
    lines.append(f"replayed run {data['outcome']}" + (" — identical to the recording" if data["identical"] else ""))
    return lines


def rows_table(title: str, data: dict | list) -> Any:
    """A rich Table of one record or a list of records (keys of the first as columns), for the terminal."""
    from rich.table import Table

    rows = data if isinstance(data, list) else [data]
    table = Table(title=title, title_justify="left")
    keys = list(rows[0]) if rows else ["(none)"]
    for key in keys:
        table.add_column(str(key))
    for row in rows:
        table.add_row(*(str(row.get(k, "")) for k in keys))
    return table
