"""The eval's report: per-task rows, totals by strategy, the JSON document, markdown and chart."""

from __future__ import annotations

import base64

from artoo.eval import sequence
from artoo.eval.failures import by_kind
from artoo.eval.png import bar_panels, line_chart

RULE = ("solved = the file-system change set of artoo's run equals the gold command's on a fresh tree "
        "(same paths deleted, added or modified, each ending with the same kind, content and permissions) "
        "AND every non-empty line the gold printed (whitespace collapsed) appears among the lines of "
        "artoo's answer; when the gold exits non-zero or prints nothing only the file system is compared")


def totals(rows: list[dict]) -> dict:
    """Solved rate, LLM calls (per solved task), tokens, wall time and Law-1 questions of one strategy."""
    solved = sum(1 for r in rows if r["solved"])
    calls = sum(r["llm_calls"] for r in rows)
    return {"tasks": len(rows), "solved": solved, "solved_rate": round(solved / len(rows), 3) if rows else 0.0,
            "llm_calls": calls, "llm_calls_per_solved": round(calls / solved, 2) if solved else None,
            "prompt_tokens": sum(r["prompt_tokens"] for r in rows),
            "completion_tokens": sum(r["completion_tokens"] for r in rows),
            "rounds": sum(r["rounds"] for r in rows),
            "wall_seconds": round(sum(r["wall_seconds"] for r in rows), 2),
            "law1_questions": sum(r["law1_questions"] for r in rows),
            "repairs": sum(r.get("repairs", 0) for r in rows),
            "invalid_answers": sum(r.get("invalid_answers", 0) for r in rows),
            "failures": by_kind(rows)}


def document(suite: str, brain: str, seed: int, mistakes: bool, limit: int | None, results: dict,
             rates: dict | None) -> dict:
    """The whole eval as JSON data."""
    return {"suite": suite, "brain": brain, "seed": seed, "mistakes": mistakes if brain == "simulated" else None,
            "mistake_rates": rates, "limit": limit, "rule": RULE,
            "totals": {s: r["totals"] for s, r in results.items()},
            "tasks": {s: r["tasks"] for s, r in results.items()}}


def chart_png(doc: dict) -> bytes:
    """Solved rate and LLM calls per solved task, by strategy."""
    totals_ = doc["totals"]
    solved = [(s, t["solved_rate"], f"{t['solved_rate'] * 100:.0f}%") for s, t in totals_.items()]
    calls = [(s, t["llm_calls_per_solved"] or 0.0, f"{t['llm_calls_per_solved'] or 0:.1f}")
             for s, t in totals_.items()]
    return bar_panels([("solved rate", solved), ("LLM calls/solved", calls)])


def markdown(doc: dict, png: bytes | None = None) -> str:
    """Totals as a markdown table (and the chart inline)."""
    lines = [f"# artoo eval: {doc['suite']} ({doc['brain']} brain, seed {doc['seed']})", "",
             "| strategy | solved | rate | LLM calls/solved | tokens | rounds | wall s | Law-1 questions |",
             "|---|---|---|---|---|---|---|---|"]
    for strategy, t in doc["totals"].items():
        lines.append(f"| {strategy} | {t['solved']}/{t['tasks']} | {t['solved_rate']:.1%} | "
                     f"{t['llm_calls_per_solved']} | {t['prompt_tokens'] + t['completion_tokens']} | {t['rounds']} | "
                     f"{t['wall_seconds']} | {t['law1_questions']} |")
    lines += ["", "Unsolved tasks by kind (artoo/eval/failures.py):", ""]
    for strategy, t in doc["totals"].items():
        kinds = ", ".join(f"{kind} {n}" for kind, n in (t.get("failures") or {}).items() if n) or "none"
        lines.append(f"- {strategy}: {kinds}; repaired answers' repairs {t.get('repairs', 0)}, "
                     f"invalid answers {t.get('invalid_answers', 0)}")
    lines += sequence.markdown(doc)
    lines += ["", f"Rule: {doc['rule']}."]
    if png:
        lines += ["", f"![chart](data:image/png;base64,{base64.b64encode(png).decode()})"]
    return "\n".join(lines)


def sequence_png(doc: dict) -> bytes | None:
    """Cumulative solved over the task index, cold vs sequence per strategy (None: no sequence was run)."""
    blocks = doc.get("sequence") or {}
    if not blocks:
        return None
    series = [(f"{strategy} {mode}", block["cumulative_solved"][mode])
              for strategy, block in blocks.items() for mode in sequence.MODES]
    return line_chart("cumulative solved over task index", series)


def sequence_markdown(doc: dict, png: bytes) -> str:
    """The cold-vs-sequence tables and the cumulative chart (the ``eval-sequence`` artifact)."""
    lines = [f"# artoo eval: {doc['suite']}, memory over a task sequence ({doc['brain']} brain, seed {doc['seed']})",
             *sequence.markdown(doc), "",
             f"![cumulative solved](data:image/png;base64,{base64.b64encode(png).decode()})"]
    return "\n".join(lines)
