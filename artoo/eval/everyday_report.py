"""The everyday eval's report: one row per runner and task, totals per runner, the JSON document and markdown.

Runners are ``artoo (ggs)``, ``artoo (retry)``, ``one-command`` and ``bash-loop``; every row has the same
fields, so the four are compared on the same terms (right, false accepts, calls, tokens, cache, wall).
"""

from __future__ import annotations

import statistics
from typing import Any

from artoo.eval.everyday import EverydayTask, Judgement

RULE = ("right = every end-state check of the task (ours, artoo/eval/everyday_suite.py) passes on the final "
        "folder AND every laid-out file the request does not touch is unchanged, byte for byte; accepted = artoo "
        "exited 0 (directive accept or success), one-command's command exited 0, bash-loop said DONE; "
        "false accept = accepted and not right; unsure = artoo ended unsure (exit 3), neither right nor false; "
        "artoo's calls are its role calls, its short votes counted apart")


def artoo_runner(strategy: str) -> str:
    """The runner's name for an artoo strategy: ``artoo (ggs)``."""
    return f"artoo ({strategy})"


def row(task: EverydayTask, judgement: Judgement, accepted: bool, calls: int, prompt_tokens: int,
        completion_tokens: int, cached: int | None, wall_s: float, **extra: Any) -> dict[str, Any]:
    """One runner's result on one task (``extra``: what only this runner has: its directive, its commands)."""
    return {"id": task.id, "kind": task.kind, "steps": task.steps, "right": judgement.right,
            "end_state": judgement.end_state, "untouched": judgement.untouched, "accepted": accepted,
            "false_accept": accepted and not judgement.right, "llm_calls": calls, "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens, "cached_prompt_tokens": cached, "wall_seconds": round(wall_s, 3),
            **extra}


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A runner's figures: right (one-step and multi-step apart), false accepts, medians of wall and calls,
    summed tokens, and the share of prompt tokens the server served from its cache (None: it never said)."""
    one = [r for r in rows if r["steps"] == 1]
    reported = [r for r in rows if r["cached_prompt_tokens"] is not None]
    cached = sum(r["cached_prompt_tokens"] for r in reported)
    reported_prompt = sum(r["prompt_tokens"] for r in reported)
    return {"tasks": len(rows), "right": sum(r["right"] for r in rows),
            "right_one_step": sum(r["right"] for r in one), "one_step": len(one),
            "right_multi_step": sum(r["right"] for r in rows if r["steps"] > 1),
            "multi_step": len(rows) - len(one),
            "accepted": sum(r["accepted"] for r in rows), "false_accepts": sum(r["false_accept"] for r in rows),
            "accepted_right": sum(r["accepted"] and r["right"] for r in rows),
            "unsure": sum(bool(r.get("unsure")) for r in rows),
            "unsure_top_right": sum(r.get("top_group_right") is True for r in rows),
            "unverified": sum(bool(r.get("unverified")) for r in rows),
            "unverified_right": sum(bool(r.get("unverified")) and r["right"] for r in rows),
            "votes": sum(r.get("votes", 0) for r in rows), "vote_tokens": sum(r.get("vote_tokens", 0) for r in rows),
            "median_votes": _median([r.get("votes", 0) for r in rows]),
            "over_240_s": sum(r["wall_seconds"] > 240 for r in rows),
            "median_wall_s": _median([r["wall_seconds"] for r in rows]),
            "median_calls": _median([r["llm_calls"] for r in rows]),
            "median_calls_one_step": _median([r["llm_calls"] for r in one]),
            "llm_calls": sum(r["llm_calls"] for r in rows),
            "prompt_tokens": sum(r["prompt_tokens"] for r in rows),
            "completion_tokens": sum(r["completion_tokens"] for r in rows),
            "cached_prompt_tokens": cached if reported else None,
            "cache_share": round(cached / reported_prompt, 3) if reported and reported_prompt else None,
            "wall_seconds": round(sum(r["wall_seconds"] for r in rows), 2)}


def document(brain: dict[str, Any], tasks: list[EverydayTask], runners: dict[str, list[dict]],
             machine: dict[str, Any], occurrence: dict[str, int] | None = None) -> dict[str, Any]:
    """The whole eval as JSON data (``occurrence``: each task's occurrence of its kind, in a sequence eval)."""
    doc = {"suite": "everyday", "brain": brain, "machine": machine, "rule": RULE,
           "task_list": [{"id": t.id, "kind": t.kind, "steps": t.steps, "request": t.request} for t in tasks],
           "totals": {name: totals(rows) for name, rows in runners.items()}, "tasks": runners}
    if occurrence is not None:
        for t in doc["task_list"]:
            t["occurrence"] = occurrence[t["id"]]
        doc["by_occurrence"] = {name: by_occurrence(rows, occurrence) for name, rows in runners.items()}
    return doc


def by_occurrence(rows: list[dict[str, Any]], occurrence: dict[str, int]) -> dict[str, Any]:
    """A runner's figures on each kind's first task and on its later ones, and the share of kinds whose second task
    was right: whether memory of a kind made its next task better."""
    def part(group: list[dict[str, Any]]) -> dict[str, Any]:
        return {"tasks": len(group), "right": sum(r["right"] for r in group),
                "median_calls": _median([r["llm_calls"] for r in group]),
                "prompt_tokens": sum(r["prompt_tokens"] for r in group),
                "median_wall_s": _median([r["wall_seconds"] for r in group]),
                "saw_verified": sum(bool(r.get("verified_lines")) for r in group),
                "followed": sum(r.get("followed") is True for r in group)}
    first = [r for r in rows if occurrence.get(r["id"]) == 1]
    later = [r for r in rows if occurrence.get(r["id"], 1) > 1]
    second = [r for r in rows if occurrence.get(r["id"]) == 2]
    return {"first": part(first), "later": part(later),
            "second_right": f"{sum(r['right'] for r in second)}/{len(second)}"}


def _cell(r: dict[str, Any] | None) -> str:
    if r is None:
        return "-"
    verdict = "right" if r["right"] else ("FALSE ACCEPT" if r["false_accept"] else "wrong")
    verdict += " · unsure" if r.get("unsure") else (" · unverified" if r.get("unverified") else "")
    calls = r["llm_calls"]
    return f"{verdict} · {calls} call{'' if calls == 1 else 's'} · {r['wall_seconds']:.1f} s"


def _brain_line(brain: dict[str, Any]) -> str:
    if brain.get("kind") == "simulated":
        return f"simulated brain, seed {brain.get('seed')}, mistakes {'on' if brain.get('mistakes') else 'off'}"
    sampling = ", ".join(f"{k} {v}" for k, v in (brain.get("sampling") or {}).items()) or "the server's sampling"
    return f"{brain.get('model')} at {brain.get('base_url')} ({sampling})"


def markdown(doc: dict[str, Any]) -> str:
    """Totals per runner, then runner × task, then the rule."""
    machine = doc.get("machine") or {}
    load = machine.get("load_average")
    lines = [f"# artoo eval everyday: {_brain_line(doc['brain'])}", "",
             f"{len(doc['task_list'])} tasks; load average before the run {load}; {machine.get('cpus')} CPUs", "",
             "| runner | right | accepted and right | one-step | multi-step | false accepts | unsure (top right) "
             "| unverified (right) "
             "| median wall s | median calls (one-step) | votes (median, tokens) | prompt tokens | completion tokens "
             "| cached |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, t in doc["totals"].items():
        share = "n/a" if t["cache_share"] is None else f"{t['cache_share']:.0%}"
        lines.append(f"| {name} | {t['right']}/{t['tasks']} | {t.get('accepted_right', '-')} | "
                     f"{t['right_one_step']}/{t['one_step']} | "
                     f"{t['right_multi_step']}/{t['multi_step']} | {t['false_accepts']} | "
                     f"{t.get('unsure', 0)} ({t.get('unsure_top_right', 0)}) | "
                     f"{t.get('unverified', 0)} ({t.get('unverified_right', 0)}) | {t['median_wall_s']} | "
                     f"{t['median_calls']} ({t['median_calls_one_step']}) | "
                     f"{t.get('votes', 0)} ({t.get('median_votes')}, {t.get('vote_tokens', 0)}) | "
                     f"{t['prompt_tokens']} | "
                     f"{t['completion_tokens']} | {share} |")
    names = list(doc["tasks"])
    by_runner = {name: {r["id"]: r for r in rows} for name, rows in doc["tasks"].items()}
    lines += ["", "| task | kind | steps | " + " | ".join(names) + " |", "|---|---|---|" + "---|" * len(names)]
    for task in doc["task_list"]:
        cells = " | ".join(_cell(by_runner[name].get(task["id"])) for name in names)
        lines.append(f"| {task['id']} | {task['kind']} | {task['steps']} | {cells} |")
    wrong = [(name, r) for name, rows in doc["tasks"].items() for r in rows if not r["right"]]
    if wrong:
        lines += ["", "Why each wrong result is wrong (the checks' words):", ""]
        for name, r in wrong:
            why = "; ".join((r["end_state"] + r["untouched"])[:2])
            kind = f" ({r['failure']})" if r.get("failure") else ""
            error = f" [error: {r['error'][:200]}]" if r.get("error") else ""
            lines.append(f"- {name} · {r['id']}{kind}: {why}{error}")
    if doc.get("by_occurrence"):
        lines += ["", "| runner | occurrence | tasks | right | median calls | prompt tokens | median wall s | "
                  "saw a verified method | followed it |", "|---|---|---|---|---|---|---|---|---|"]
        for name, parts in doc["by_occurrence"].items():
            for which in ("first", "later"):
                p = parts[which]
                lines.append(f"| {name} | {which} of its kind | {p['tasks']} | {p['right']} | {p['median_calls']} | "
                             f"{p['prompt_tokens']} | {p['median_wall_s']} | {p['saw_verified']} | {p['followed']} |")
            lines.append(f"| {name} | second of its kind, right | | {parts['second_right']} | | | | | |")
    lines += ["", f"Rule: {doc['rule']}."]
    return "\n".join(lines)
