"""How long Law 1's text judge takes per command: parsing (tree-sitter) and the whole verdict.

``python -m artoo.bench.law1_parse`` prints medians over a fixed corpus of the commands
an agent typically runs, from one-liners to here-documents and nested substitutions.
The judge runs before a shell command executes wherever no overlay can be mounted, or
beside one with the network on, so this is a per-command cost on the critical path there;
nothing asserts it (speed targets live in bench/, never in tests).
"""

from __future__ import annotations

import statistics
import sys
import time

from artoo.tasks.law1.judge import judge_command
from artoo.tasks.shell.parse import parse

CORPUS = [
    "ls -la", "grep -rn TODO .", "find . -name '*.py' -exec grep -l x {} +", "rm -rf build",
    "echo hi > out.txt 2>&1", "cat a.txt | sort | uniq -c | sort -rn | head -n 5",
    "cd /tmp && tar -xzf a.tgz && ls", "curl -sSL -d x=1 https://api.example.com/v1",
    "for f in *.txt; do wc -l \"$f\"; done", "if [ -d dir ]; then rm -r dir; fi",
    "echo $(case a in a) echo hi;; esac)", "sh -c 'find . -name \"*.tmp\" -delete'",
    "URL=https://x.io/a; curl \"$URL\"", "python3 -c \"import os; os.remove('x')\"",
    "git status && git diff --stat && git log --oneline -5", "cat <<EOF > notes.md\n# notes\n$(date)\nEOF",
    "docker compose ps", "find . -type f -print0 | xargs -0 sed -i 's/a/b/'",
]


def _median_us(action, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for command in CORPUS:
            action(command)
        samples.append((time.perf_counter() - start) / len(CORPUS) * 1e6)
    return statistics.median(samples)


def main(rounds: int = 50) -> dict[str, float]:
    """Print and return the median microseconds per command for parsing and for the whole verdict."""
    figures = {"parse_us_per_command": _median_us(parse, rounds),
               "judge_us_per_command": _median_us(judge_command, rounds)}
    for name, value in figures.items():
        print(f"{name:24} {value:9.1f} µs  (median of {rounds} rounds over {len(CORPUS)} commands)")
    return figures


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
