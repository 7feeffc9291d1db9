"""The vote: one short request for one bash command that does the user's whole request, from their words and a
glance at the folder.

Why short: a vote is one sample among several whose runs are compared by what they change, so it needs no role
text and no plan; five such requests cost about as much as one executor turn.  It begins with the run's shared text
all roles begin with, so a local server's prompt cache serves that part and the next role's call finds it still
cached.  The first vote is sampled cool, the rest warmer, so votes differ where the model is unsure; and votes take
turns at the configured framings (a shell one-liner, a short Python program), because samples of one model from one
prompt share its mistakes, and a quorum of one shared mistake is a false accept.
"""

from __future__ import annotations

from typing import Literal

from artoo.tasks.roles.prompting import system, user

Framing = Literal["shell", "python"]
FRAMING_TEXT: dict[str, str] = {
    "shell": "",
    "python": (" Write it as one python3 -c '...' command running a short Python 3 program that uses the standard "
               "library (json, csv, configparser, pathlib, re, shutil) to read and write the files."),
}
"""What each framing adds after the head: nothing for a shell one-liner; for Python, how to write it."""

VOTE_HEAD = "Write ONE bash command that does this request in the current folder."
"""How a vote request begins (the scripted test server routes it by this)."""


def vote_messages(request: str, glance: str, framing: Framing = "shell") -> list[dict]:
    """The vote request: the run's shared text, the head in its framing, the user's own words, and the glance when
    the shared text does not show the folder already; nothing else."""
    seen = (f"\n\nThe folder (each file's name, size and first lines):\n{glance}" if glance
            else " The folder is shown above, as it was before the task.")
    text = (f"{VOTE_HEAD}{FRAMING_TEXT[framing]} Answer with the command in one ```bash block and nothing else."
            f"\n\nRequest: {request.strip()}{seen}")
    return [system(""), user(text)]


async def vote(llm, request: str, glance: str, temperature: float | None, framing: Framing = "shell") -> str | None:
    """One vote's command, or None when the answer held none."""
    return await llm.command("vote", vote_messages(request, glance, framing), temperature=temperature)
