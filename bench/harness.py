"""The benchmark harness: plan the runs, run the candidates side by side, print tables or one JSON.

    artoo bench [--json] [--quick] [--only overhead,parallel,economy,flow_runs,memory,audit,law1_overlay]
                [--latency S] [--repeats N] [--api-url URL] [--ephemeral-only] [--memory-full]

Benchmarks (see bench/README.md for how to read them):

* ``overhead``  — wall ÷ LLM critical path, in process per scenario and mode, and a whole
  ``artoo run`` process (1.5 s per call);
* ``parallel``  — wall(N) ÷ wall(1) for N = 1, 2, 4, 8 parallel subtasks;
* ``economy``   — LLM calls by role and tokens sent against the spec's minimum chain;
* ``flow_runs`` — one empty subflow / task run, ours against Prefect's defaults;
* ``memory``    — ``bench/memory_bench.py`` (tiny sizes with --quick; 10⁵–10⁷ with --memory-full);
* ``audit``     — ``bench/audit_bench.py``: the REPL's ``/audit`` answer time, p95 against 3 s.
* ``law1_overlay`` — what Law 1 by effect adds per shell command (overlay + change set) on a
  10,000-file workspace, side by side with the plain sandbox (``bench/overlay_bench.py``).

The modes are ``ephemeral`` (Prefect's SQLite server) and ``local`` (a Postgres-backed
``prefect server start`` this harness starts, or the one at ``--api-url``).  Nothing
here asserts: every figure is printed with its target and whether it met it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console

from artoo.bench.env import EPHEMERAL, LOCAL, Servers, isolate, stop_ephemeral, stop_lingering, temp_root
from artoo.bench.report import Figure, Section, at_most, figures_table, fmt, table

BENCHMARKS = ("overhead", "parallel", "economy", "flow_runs", "memory", "audit", "law1_overlay")
MEMORY_QUICK, MEMORY_DEFAULT, MEMORY_FULL = [10**4], [10**5], [10**5, 10**6, 10**7]
MEMORY_UNITS = {"query_mk_p50_ms@1e7": "ms", "write_p50_us": "µs", "ingest_per_s": "/s", "dream_s@1e7": "s"}


def parse(argv: list[str] | None) -> argparse.Namespace:
    """The harness's command line."""
    parser = argparse.ArgumentParser(prog="artoo bench", description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    parser.add_argument("--quick", action="store_true", help="tiny configuration: short latency, one run each")
    parser.add_argument("--only", default=",".join(BENCHMARKS), help="comma-separated benchmarks to run")
    parser.add_argument("--latency", type=float, default=None, help="seconds per scripted LLM call (0.3; quick 0.1)")
    parser.add_argument("--process-latency", type=float, default=None,
                        help="seconds per call for the whole-process figure (1.5; quick 0.3)")
    parser.add_argument("--repeats", type=int, default=None, help="runs per candidate (3; quick 1)")
    parser.add_argument("--api-url", default=None, help="use this running Prefect server as the local mode")
    parser.add_argument("--ephemeral-only", action="store_true", help="skip the Postgres-backed local mode")
    parser.add_argument("--memory-full", action="store_true", help="memory at 10⁵, 10⁶ and 10⁷ Megrams (slow)")
    parser.add_argument("--save", type=Path, default=None, help="also write the JSON document to this file")
    args = parser.parse_args(argv)
    args.selection = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = args.selection - set(BENCHMARKS)
    if unknown or not args.selection:
        parser.error(f"unknown benchmark(s) {sorted(unknown)}; choose from {', '.join(BENCHMARKS)}")
    args.latency = args.latency if args.latency is not None else (0.1 if args.quick else 0.3)
    args.process_latency = args.process_latency if args.process_latency is not None else (0.3 if args.quick else 1.5)
    args.repeats = args.repeats if args.repeats is not None else (1 if args.quick else 3)
    if args.latency <= 0 or args.process_latency <= 0 or args.repeats < 1:
        parser.error("--latency and --process-latency must be positive and --repeats at least 1")
    return args


def run(args: argparse.Namespace, root: Path, original_env: dict[str, str], say) -> dict:
    """Every selected benchmark; returns the JSON document.

    The whole-process figure runs last, after every server this harness started is
    stopped, because it is measured with no Prefect server running.
    """
    servers = Servers(root, args.api_url)
    sections: dict[str, Section] = {}
    modes: dict[str, str | None] = {EPHEMERAL: None}
    try:
        if not args.ephemeral_only and args.selection & {"overhead", "parallel", "flow_runs"}:
            say(f"local mode: the Prefect server at {args.api_url}" if args.api_url else
                "starting the local Prefect server (PostgreSQL-backed)")
            modes[LOCAL] = servers.start_local()
        if args.selection & {"overhead", "parallel", "economy"}:
            sections.update(_loops(args, modes, root, say))
        if "flow_runs" in args.selection:
            say("per-flow-run overhead: empty subflows and tasks")
            from artoo.bench import flowrun_bench

            sections["flow_runs"] = flowrun_bench.section(
                flowrun_bench.measure(1 if args.quick else 10, modes, root / "runs.log", drop_first=not args.quick))
    finally:
        stop_ephemeral()  # drains Prefect's event and log workers first, while every server still answers
        servers.stop()
    if "memory" in args.selection:
        sections["memory"] = _memory(args, root, say)
    if "audit" in args.selection:
        sections["audit"] = _audit(args, say)
    if "law1_overlay" in args.selection:
        from artoo.bench import overlay_bench

        say("Law 1 by effect: shell commands on a 10,000-file workspace, plain sandbox against overlay")
        sections["law1_overlay"] = overlay_bench.section(overlay_bench.measure(10_000, 5 if args.quick else 30, root))
    if "overhead" in args.selection:
        _process(args, root, original_env, sections["overhead"], say)
    order = [name for name in BENCHMARKS if name in sections]
    used = list(modes) if args.selection & {"overhead", "parallel", "economy", "flow_runs"} else []
    doc = document(args, [sections[name] for name in order], used)
    doc["config"]["local_server"] = servers.backend
    return doc


def _loops(args, modes: dict[str, str | None], root: Path, say) -> dict[str, Section]:
    from artoo.bench import loops_bench
    from artoo.bench.runs import run_side_by_side, warm_up

    names = list(modes)
    plan = loops_bench.needed(args.selection, names, args.quick)
    jobs = loops_bench.make_jobs(plan, modes, args.repeats, args.latency, args.quick, args.process_latency)
    warmups = {}
    for mode, api_url in modes.items():  # quick skips them: its first run per mode pays the start-up instead
        if not args.quick and any(m == mode for _, m in plan):
            say(f"warm-up run [{mode}]")
            warmups[mode] = round(warm_up(mode, api_url, root, loops_bench.builders(args.latency)["one"](1)), 3)
    run_side_by_side(list(jobs.values()), args.repeats, root, say)
    out = {}
    if "overhead" in args.selection:
        out["overhead"] = loops_bench.overhead_section(jobs, names, warmups)
    if "parallel" in args.selection:
        out["parallel"] = loops_bench.parallel_section(jobs, names, args.quick)
    if "economy" in args.selection:
        out["economy"] = loops_bench.economy_section(jobs)
    return out


def _process(args, root: Path, original_env: dict[str, str], section: Section, say) -> None:
    """Whole ``artoo run`` processes: quick reuses the home the in-process runs warmed, else a fresh one."""
    from artoo.bench import loops_bench
    from artoo.bench.runs import process_run

    processes = 1 if args.quick else 2
    home = "in-process" if args.quick else None
    say(f"{processes} whole `artoo run` process(es) at {args.process_latency} s per call, second run then cold, "
        "each after one warm-up process")
    for cold in (False, True):
        scenario = loops_bench.process_scenario(args.process_latency, processes + 1)
        loops_bench.add_process(section, process_run(scenario, processes, root, original_env, home, cold=cold))


def _audit(args, say) -> Section:
    """The REPL's /audit answer time over a long audit log (cold and p95 warm, against 3 s)."""
    from artoo.bench import audit_bench

    tasks, samples = (50, 5) if args.quick else (500, 20)
    say(f"/audit over an audit log of {tasks} tasks, {samples} calls")
    doc = audit_bench.run(tasks, samples)
    section = Section("audit", "/audit answer time (artoo chat)", details=doc)
    target = f"≤ {audit_bench.TARGET_S:.0f}"
    section.figures.append(Figure("audit.p95_s", "/audit answer, p95 of warm calls", doc["p95_s"], "s", target,
                                  at_most(doc["p95_s"], audit_bench.TARGET_S)))
    section.figures.append(Figure("audit.cold_s", "/audit answer, first call (whole log folded)", doc["cold_s"],
                                  "s", target, at_most(doc["cold_s"], audit_bench.TARGET_S)))
    return section


def _memory(args, root: Path, say) -> Section:
    from artoo.bench import memory_bench

    sizes = MEMORY_QUICK if args.quick else (MEMORY_FULL if args.memory_full else MEMORY_DEFAULT)
    say(f"memory at {', '.join(f'{n:.0e}' for n in sizes)} Megrams")
    doc = memory_bench.run(sizes, args.quick, root)
    section = Section("memory", "MKCT memory", details=doc)
    grid = table("MKCT memory: query_mk against the naive Python loop (ratio = speed-up), write, ingest, dream",
                 ["Megrams", "query_mk p50 ms", "naive p50 ms", "speed-up", "write p50 µs", "ingest /s", "dream s"])
    for r in doc["results"]:
        grid.add_row(f"{r['size']:.0e}", fmt(r["query_mk"]["p50_ms"]), fmt(r["naive"]["p50_ms"]),
                     fmt(r["naive"]["p50_ms"] / r["query_mk"]["p50_ms"], 1), fmt(r["write"]["p50_us"], 1),
                     f"{r['ingest']['per_s']:,.0f}", fmt(r["dream"]["seconds"]))
    section.tables.append(grid)
    for key, (what, target) in memory_bench.TARGETS.items():
        verdict = doc["targets"].get(key)
        value = _memory_value(doc, key)
        note = "not measured at these sizes (run with --memory-full)" if verdict is None else ""
        section.figures.append(Figure(f"memory.{key}", what, value, MEMORY_UNITS.get(key, ""), target,
                                      None if verdict is None else bool(verdict["met"]), note))
    return section


def _memory_value(doc: dict, key: str) -> float | None:
    """The worst value behind one memory target (None when its size was not run)."""
    by_size = {r["size"]: r for r in doc["results"]}
    picks = {"query_mk_p50_ms@1e7": lambda: by_size[10**7]["query_mk"]["p50_ms"],
             "dream_s@1e7": lambda: by_size[10**7]["dream"]["seconds"],
             "write_p50_us": lambda: max(r["write"]["p50_us"] for r in doc["results"]),
             "ingest_per_s": lambda: min(r["ingest"]["per_s"] for r in doc["results"])}
    try:
        return picks[key]()
    except (KeyError, ValueError):
        return None


def document(args, sections: list[Section], modes: list[str]) -> dict:
    """The one JSON document: configuration, machine, every figure with its target."""
    return {
        "artoo_bench": 1,
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "load_average": [round(x, 2) for x in os.getloadavg()]},
        "config": {"quick": args.quick, "latency_s": args.latency, "process_latency_s": args.process_latency,
                   "repeats": args.repeats, "modes": modes, "selection": sorted(args.selection)},
        "figures": [f.as_json() for s in sections for f in s.figures],
        "sections": {s.name: s.as_json() for s in sections},
        "_sections": sections,
    }


def render(doc: dict, console: Console) -> None:
    """Every section's tables, then its figures against their targets."""
    cfg = doc["config"]
    console.print(f"[bold]artoo bench[/] {doc['measured_at']}: {doc['machine']['cpus']} CPUs, load "
                  f"{doc['machine']['load_average']}; latency {cfg['latency_s']} s per call, "
                  f"{cfg['repeats']} run(s) per candidate, modes {', '.join(cfg['modes']) or 'none'}"
                  f"{' (quick)' if cfg['quick'] else ''}")
    for section in doc["_sections"]:
        for grid in section.tables:
            console.print(grid)
        judged = figures_table(section)
        if judged is not None:
            console.print(judged)
        for note in section.notes:
            console.print(f"  note: {note}")


def main(argv: list[str] | None = None) -> int:
    """Run the selected benchmarks; print tables (or one JSON document with --json)."""
    args = parse(argv)
    root = temp_root()
    progress = Console(file=os.fdopen(os.dup(2), "w"), highlight=False)
    started = time.monotonic()

    def say(text: str) -> None:
        progress.print(f"bench {time.monotonic() - started:6.1f} s: {text}", style="dim", markup=False)

    try:
        original_env = isolate(root)
        doc = run(args, root, original_env, say)
    except Exception:
        progress.print(f"[red]bench failed; the run logs are kept in {root}[/]")
        raise
    finally:
        stop_lingering(root)
    shutil.rmtree(root, ignore_errors=True)
    sections = doc.pop("_sections")
    text = json.dumps(doc, indent=1, ensure_ascii=False)
    if args.save:
        args.save.write_text(text + "\n", encoding="utf-8")
    if args.json:
        print(text)
    else:
        doc["_sections"] = sections
        out = Console(highlight=False)
        if not out.is_terminal:
            out = Console(highlight=False, width=160)
        render(doc, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
