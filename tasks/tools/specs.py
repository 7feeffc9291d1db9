"""OpenAI function-tool specs for the executor's tools, in the spec's priority order."""

from __future__ import annotations

import copy


def _spec(name: str, description: str, **params: str) -> dict:
    properties = {key: {"type": "string", "description": text} for key, text in params.items()}
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": list(params),
                       "additionalProperties": False}}}


SPECS: list[dict] = [
    _spec("locate", "Find personal files anywhere in the user's home by name: a substring ('invoice') or a "
          "glob ('*.pdf'). Fast; always use it for files outside the project.",
          query="Name substring or glob pattern to look for."),
    _spec("glob", "Find project files by filename pattern, recursively under the workspace "
          "('*.py', 'src/**/*.ts', or an absolute pattern).",
          pattern="Glob pattern; without a '/' it matches names at any depth."),
    _spec("read_file", "Read one text file (binary files are summarised). Relative paths are in the workspace.",
          path="File path: absolute, ~/..., or relative to the workspace."),
    _spec("write_file", "Write a whole text file (parent folders are created). Relative paths go to the "
          "workspace. Replacing an existing file needs the user's approval.",
          path="File path: absolute, ~/..., or relative to the workspace.",
          content="The complete new content of the file."),
    _spec("shell", "Run one bash command in the workspace for counting, aggregation or anything the tools "
          "above do not cover. Irreversible commands (deleting, overwriting, system changes, sending data "
          "off the machine) need the user's approval.",
          command="The bash command line."),
    _spec("search", "Search the web (DuckDuckGo) and return titles, links and snippets.",
          query="Search terms."),
]

PRIMARY = {"locate": "query", "glob": "pattern", "read_file": "path", "write_file": "path",
           "shell": "command", "search": "query"}
"""The argument that is each tool's input (shown in evidence, checked against blocked targets)."""


def specs_for(blocked_tools: set[str]) -> list[dict]:
    """The function-tool specs an executor is offered when ``blocked_tools`` are blocked (copies: callers may edit)."""
    return [copy.deepcopy(s) for s in SPECS if s["function"]["name"] not in blocked_tools]


def served(blocked_tools: set[str], search_url: str | None = None) -> list[dict]:
    """The specs an executor is offered here: not the blocked tools, and not ``search`` when its service cannot be
    reached from this machine (the toolbox and the early request ask the same, so both send the same words)."""
    from artoo.tasks.tools.web import DDG_URL, reachable

    unserved = set() if reachable(search_url or DDG_URL) else {"search"}
    return specs_for(set(blocked_tools) | unserved)
