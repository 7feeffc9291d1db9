"""Memory over a task sequence, to measure whether it makes the next task better: what each planner
was served, what its plan did with it, and the figures that set a sequence (one ARTOO_HOME, memory
and the Dreamer carrying over) beside the same tasks run cold (a fresh home per task).

Pure: decision-log records and report rows in, figures out.  The served lines come from the round's
``memory`` record (flows/round.py writes it when memory calibrated the round: memory's own MUST NOT,
SHOULD PREFER and CAUTION lines, the GGS's "blocked in this task" lines left out); the plan is the last
valid R2 ``Plan`` answer after it.  Whether a plan *followed* a line is decided by
``artoo.memory.sops.plan_follows`` (the SOP module's own reading), never by a copy of it here: a MUST NOT
line is obeyed by rule (a plan breaking it is rejected), so only SHOULD PREFER lines and SOPs can be
followed or not, and plan_follows reads a method only from an SOP's words: a SHOULD PREFER line that
quotes an earlier episode (calibration's Exploit line) is never counted as followed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from artoo.memory.sops import plan_follows

MODES = ("cold", "sequence")
KINDS = ("must_not", "prefer", "caution")


def plan_text(answer: dict | None) -> str:
    """A Plan answer as plan_follows reads it (JSON: every key and value is a word it may find)."""
    return json.dumps(answer) if isinstance(answer, dict) else ""


def planner_rounds(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per planning round that memory calibrated: the lines served and the plan answered."""
    rounds: list[dict[str, Any]] = []
    for record in records:
        if record.get("kind") == "memory":
            rounds.append({"round": record.get("round"), **{k: list(record.get(k) or []) for k in (*KINDS, "sops")},
                           "plan": None})
        elif (record.get("kind") == "llm" and record.get("schema") == "Plan" and record.get("ok")
              and rounds and isinstance(record.get("response"), dict)):
            rounds[-1]["plan"] = record["response"]  # a re-asked plan replaces the refused one
    return rounds


def task_memory(records: list[dict[str, Any]], follows: Callable[[str, str], bool] | None = None) -> dict:
    """A task's memory figures: lines its planners saw (round 1 apart), and plans that followed one."""
    follows = follows or plan_follows
    rounds = planner_rounds(records)
    seen = [sum(len(r[k]) for k in KINDS) for r in rounds]
    row = {"memory_lines": sum(seen), "memory_lines_round1": seen[0] if seen else 0,
           "memory_lines_by_kind": {k: sum(len(r[k]) for r in rounds) for k in KINDS},
           "planner_rounds": len(rounds), "sop_lines": sum(len(r["sops"]) for r in rounds),
           "memory_seen_round1": [line for k in KINDS for line in rounds[0][k]] if rounds else []}
    texts = [plan_text(r["plan"]) for r in rounds]
    row["plans_following_memory"] = sum(1 for r, t in zip(rounds, texts, strict=True)
                                        if t and any(follows(line, t) for line in r["prefer"]))
    row["plans_following_sop"] = sum(1 for r, t in zip(rounds, texts, strict=True)
                                     if t and any(follows(sop, t) for sop in r["sops"]))
    return row


def _per(total: float, n: int) -> float | None:
    return round(total / n, 2) if n else None


def mode_totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One mode's figures over its tasks (rows of the eval's report, with task_memory's fields)."""
    n = len(rows)
    solved = sum(1 for r in rows if r["solved"])
    first = sum(1 for r in rows if r["solved"] and r["rounds"] == 1)
    rounds = sum(r.get("planner_rounds", 0) for r in rows)
    known = [r for r in rows if r.get("plans_following_sop") is not None]
    sop_rows = [r for r in known if r["plans_following_sop"]]
    return {"tasks": n, "solved": solved, "solved_rate": round(solved / n, 3) if n else 0.0,
            "llm_calls_per_task": _per(sum(r["llm_calls"] for r in rows), n),
            "prompt_tokens_per_task": _per(sum(r["prompt_tokens"] for r in rows), n),
            "first_round_solved": first, "first_round_rate": round(first / n, 3) if n else 0.0,
            "planner_rounds": rounds, "memory_lines": sum(r.get("memory_lines", 0) for r in rows),
            "memory_lines_per_round": _per(sum(r.get("memory_lines", 0) for r in rows), rounds),
            "tasks_with_memory_in_round1": sum(1 for r in rows if r.get("memory_lines_round1", 0)),
            "memory_lines_by_kind": {k: sum((r.get("memory_lines_by_kind") or {}).get(k, 0) for r in rows)
                                     for k in KINDS},
            "plans_following_memory": sum(r["plans_following_memory"] for r in known) if known else None,
            "plans_following_sop": sum(r["plans_following_sop"] for r in known) if known else None,
            "tasks_following_sop": len(sop_rows) if known else None,
            "tasks_following_sop_solved": sum(1 for r in sop_rows if r["solved"]) if known else None}


def cumulative_solved(rows: list[dict[str, Any]]) -> list[int]:
    """Solved tasks so far, after each task in order (the chart's line)."""
    out, total = [], 0
    for row in sorted(rows, key=lambda r: r["index"]):
        total += 1 if row["solved"] else 0
        out.append(total)
    return out


def comparison(cold: list[dict], sequence: list[dict], dreams: list[dict], dream_every: int, distil: str) -> dict:
    """One strategy's cold-vs-sequence block of the JSON document."""
    return {"dream_every": dream_every, "distil": distil,
            "modes": {"cold": mode_totals(cold), "sequence": mode_totals(sequence)},
            "cumulative_solved": {"cold": cumulative_solved(cold), "sequence": cumulative_solved(sequence)},
            "dreams": dreams}


def markdown(doc: dict) -> list[str]:
    """The cold-vs-sequence tables of a sequence eval (empty when the eval ran no sequence)."""
    blocks = doc.get("sequence") or {}
    if not blocks:
        return []
    lines = ["", "## Memory over the task sequence (cold: a fresh home per task; sequence: one home)", "",
             "| strategy | mode | solved | first-round | LLM calls/task | prompt tokens/task | memory lines seen "
             "(per round) | tasks with memory in round 1 | plans following a memory line | following an SOP "
             "(solved) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for strategy, block in blocks.items():
        for mode in MODES:
            t = block["modes"][mode]
            sop = ("n/a" if t["plans_following_sop"] is None
                   else f"{t['plans_following_sop']} ({t['tasks_following_sop_solved']}/{t['tasks_following_sop']})")
            lines.append(f"| {strategy} | {mode} | {t['solved']}/{t['tasks']} ({t['solved_rate']:.1%}) | "
                         f"{t['first_round_solved']} | {t['llm_calls_per_task']} | {t['prompt_tokens_per_task']} | "
                         f"{t['memory_lines']} ({t['memory_lines_per_round']}) | {t['tasks_with_memory_in_round1']} | "
                         f"{_or_na(t['plans_following_memory'])} | {sop} |")
    for strategy, block in blocks.items():
        promoted = sum(d.get("promoted", 0) for d in block["dreams"])
        failed = sum(len(d.get("consolidation_failed") or []) for d in block["dreams"])
        lines += ["", f"- {strategy}: {len(block['dreams'])} Dreamer pass(es), every {block['dream_every']} tasks; "
                      f"{promoted} rule(s) distilled, {failed} distillation(s) refused; distil: {block['distil']}"]
    return lines


def _or_na(value: Any) -> str:
    return "n/a" if value is None else str(value)


def dream_summary(report: dict, after_task: int) -> dict:
    """What one Dreamer pass did, as the document keeps it (ids left out: the pass's artifact has them)."""
    keep = ("ingested", "deleted", "demoted", "promoted", "consolidation_eligible", "consolidation_skipped",
            "consolidation_failed", "seconds")
    return {"after_task": after_task, **{k: report.get(k) for k in keep}}

