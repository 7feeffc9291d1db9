"""The vote: one short request for one bash command that does the user's whole request, from their words and a
glance at the folder.

Why short: a vote is one sample among several whose runs are compared by what they change, so it needs no role
text and no plan; five such requests cost about as much as one executor turn.  It begins with the run's shared text
all roles begin with, so a local server's prompt cache serves that part and the next role's call finds it still
cached.  The first vote is sampled cool, the rest warmer, so votes differ where the model is unsure.
"""

from __future__ import annotations

from artoo.tasks.roles.prompting import system, user

VOTE_HEAD = "Write ONE bash command that does this request in the current folder."
"""How a vote request begins (the scripted test server routes it by this)."""


def vote_messages(request: str, glance: str) -> list[dict]:
    """The vote request: the run's shared text, the head, the user's own words, and the glance when the shared text
    does not show the folder already; nothing else."""
    seen = (f"\n\nThe folder (each file's name, size and first lines):\n{glance}" if glance
            else " The folder is shown above, as it was before the task.")
    text = (f"{VOTE_HEAD} Answer with the command in one ```bash block and nothing else.\n\n"
            f"Request: {request.strip()}{seen}")
    return [system(""), user(text)]


async def vote(llm, request: str, glance: str, temperature: float | None) -> str | None:
    """One vote's command, or None when the answer held none."""
    return await llm.command("vote", vote_messages(request, glance), temperature=temperature)
