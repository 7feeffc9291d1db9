"""What each fixed prompt text costs in tokens: the laws, each role's text, the executor's tool protocols.

Why: a local CPU model pays for every prompt token of every call, and a text every call carries is the first
place to cut.  Counted by the endpoint's own tokenizer where it has one (llama-server's ``POST /tokenize``), else
estimated at four characters a token, and said which.  Run: ``python -m artoo.bench.prompt_tokens [BASE_URL]``.
"""

from __future__ import annotations

import json
import sys
import urllib.request

from artoo.tasks.llm.output.modes import BASH_NOTE, tools_note
from artoo.tasks.roles import agent_validator, executor, meta_validator, perceiver, planner, voter
from artoo.tasks.roles.prompting import LAWS, RunContext, shared_text
from artoo.tasks.tools.specs import specs_for

__all__ = ["TEXTS", "count", "main", "rows"]

TEXTS: dict[str, str] = {
    "the laws (every call)": LAWS,
    "R1 role": perceiver.ROLE,
    "R2 role (plan, with its worked example)": planner.ROLE.replace("{tools}", planner.tools_text(specs_for(set()))),
    "a vote (its head; the request and the glance follow)": voter.VOTE_HEAD,
    "R3 role, tool calls": executor.role_text("native", specs_for(set())),
    "R3 role, bash blocks": executor.BASH_ROLE,
    "R3 tool definitions (native tools)": json.dumps(specs_for(set())),
    "R3 content-protocol note": tools_note(specs_for(set())),
    "R3 bash-block note": BASH_NOTE,
    "R4a role": agent_validator.ROLE,
    "R4b role": meta_validator.ROLE,
}
"""Every fixed text a request carries, by where it goes."""


def count(text: str, base_url: str | None = None) -> tuple[int, str]:
    """Tokens of ``text`` by the endpoint's tokenizer (``/tokenize`` next to ``/v1``), else by four characters."""
    if base_url:
        root = base_url.rstrip("/").removesuffix("/v1")
        request = urllib.request.Request(f"{root}/tokenize", data=json.dumps({"content": text}).encode(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return len(json.loads(answer.read())["tokens"]), "tokenizer"
        except (OSError, ValueError, KeyError):
            pass
    return max(1, len(text) // 4), "estimate"


def rows(base_url: str | None = None) -> list[tuple[str, int, str]]:
    """(text, tokens, how counted) for every fixed text, and for the shared text of a typical run."""
    example = shared_text(RunContext(request="list the log files in logs/ that contain ERROR into errors.txt",
                                     workspace="/home/ann/work", files=("logs/", "logs/a.log", "logs/b.log")))
    texts = {**TEXTS, "shared prefix of a typical run (laws, folder, listing, request)": example}
    return [(name, *count(text, base_url)) for name, text in texts.items()]


def main(argv: list[str] | None = None) -> int:
    """Print the table as markdown."""
    args = sys.argv[1:] if argv is None else argv
    print("| text | tokens | counted by |\n|---|---|---|")
    for name, tokens, how in rows(args[0] if args else None):
        print(f"| {name} | {tokens} | {how} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
