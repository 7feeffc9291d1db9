"""Law 1's walk over a command line: every simple command, unwrapped, judged by the rules that still decide.

Every simple command and substitution is judged; wrappers (sudo, env, timeout, xargs, ``sh -c``, eval,
``find -exec``, trap, inline code …) are unwrapped and what they run judged alike, so hiding a command
never makes it safer.  Each gets what no overlay can observe (``network``, ``daemons``) and, unless it
only reads (``readonly``, or a reading form in ``forms``) or only creates new paths (``create``), a
``may change`` danger.
"""

from __future__ import annotations

import re
from dataclasses import replace

from artoo.tasks.law1 import create, daemons, forms, network, readonly
from artoo.tasks.law1.core import STDIN, Ctx, Danger, Rule, danger, parse_options, shown_stdin
from artoo.tasks.shell.parse import PLACEHOLDER, ParseError, Simple, parse, strip_prefix

MAX_DEPTH = 12
MOVERS = {"cd", "pushd", "popd"}
"""Builtins that move the shell elsewhere: relative paths after them land where the text does not say."""


def judge_script(text: str, ctx: Ctx) -> list[Danger]:
    """Every danger in a command line, substitutions and wrapped commands included."""
    if ctx.depth > MAX_DEPTH:
        return [Danger("may change", text[:60], "nests commands too deeply to judge")]
    try:
        script, dangers = parse(text), []
    except ParseError as exc:  # what cannot be read is still judged as far as it can be
        script = parse(text, partial=True)
        dangers = [Danger("cannot parse", text[:60], f"is not valid shell ({exc}); what cannot be read cannot be "
                          "called safe")]
    if any(_moves(simple) for simple in script.commands):
        ctx = replace(ctx, cwd_known=False)
    for simple in script.commands:
        dangers += judge_simple(simple, ctx)
    dangers += [d for inner in script.substitutions for d in judge_script(inner, ctx.child("$( … )"))]
    return dangers + (create.clashes(ctx) if ctx.depth == 0 else [])


def _moves(simple: Simple) -> bool:
    words = strip_prefix(simple.words)
    while words[:1] in (["builtin"], ["command"]):
        words = words[1:]
    return bool(words) and words[0] in MOVERS


def judge_simple(simple: Simple, ctx: Ctx) -> list[Danger]:
    """One simple command with its redirections: writing into a file is never only reading."""
    words, here = strip_prefix(simple.words), replace(ctx, simple=simple)
    written = [r.target for r in simple.redirects if not readonly.harmless_sink(r.target)]
    shown = [*words, *(part for r in simple.redirects for part in (r.op, r.target))]
    why = {t: create.check(t, "file", here) for t in written}
    refused = [t for t in written if why[t] is not None]
    dangers = [create.made(shown, [(t, "file") for t in written if why[t] is None], here)] if len(refused) < len(
        written) else []
    if refused:
        said = "" if here.workspace is None else f" ({'; '.join(f'{t} {why[t]}' for t in refused)})"
        dangers.append(danger("may change", shown, "writes into a file" + said, refused, here))
    named = bool(words) and words[0] in readonly.NAMERS
    if any(readonly.LOADER.fullmatch(w) or (readonly.CONFIGURES.fullmatch(w) and ("=" in w or named))
           for w in simple.words):  # ``BASH_ENV=x.sh bash -c ls``, ``read PATH``, ``GIT_DIR=x git log``
        dangers.append(danger("may change", simple.words, "sets what later commands run or load", [], here))
    return dangers + judge_argv(words, here)


def judge_argv(words: list[str], ctx: Ctx) -> list[Danger]:
    """One command's words (words[0] is the program): what leaves the machine, what a daemon changes, and
    whether it may change anything here."""
    if not words:
        return []
    name = words[0].rsplit("/", 1)[-1]
    ctx.seen.append(name)
    if PLACEHOLDER.search(words[0]) or "$" in words[0] or "`" in words[0]:
        return _changes("runs a command whose name is only known at run time")(words, ctx)
    if words[1:] in (["--help"], ["--version"], ["-h"]):
        return []
    found = network.judge(name, words, ctx)
    rule = WRAPPERS.get(name) or daemons.RULES.get(name) or _family(name)
    if rule is not None:
        return found + rule(words, ctx)
    if readonly.reads_only(words):
        return found
    formed = forms.judge(words, ctx)
    if formed is not None:
        return found + formed
    return found + [danger("may change", words, "is not a command known to only read",
                           [w for w in words[1:] if not w.startswith("-")][:3], ctx)]


def _family(name: str) -> Rule | None:
    if re.fullmatch(r"(python|pypy)[0-9.]*", name):
        return _interpreter(("-c",))
    return _shell if re.fullmatch(r"(bash|sh|zsh|dash|ksh|mksh|ash|fish)[0-9.]*", name) else None


def _changes(detail: str) -> Rule:
    """A command that may change something by itself, whatever else it runs."""
    return lambda words, ctx: [danger("may change", words, detail, [], ctx)]


# ---------------------------------------------------------------- wrappers: what they run is judged too
def _wrapped(valued: str = "", long_valued: tuple[str, ...] = (), leading: int = 0, own: str = "") -> Rule:
    """A wrapper whose own options (and ``leading`` operands) precede the command it runs."""

    def rule(words: list[str], ctx: Ctx) -> list[Danger]:
        args, i = words[1:], 0
        while i < len(args) and args[i].startswith("-") and args[i] != "-":
            i += 1
            if args[i - 1] == "--":
                break
            i += 1 if args[i - 1] in long_valued or (len(args[i - 1]) == 2 and args[i - 1][1] in valued) else 0
        return (_changes(own)(words, ctx) if own else []) + judge_argv(args[i + leading:], ctx.child(words[0]))

    return rule


def _env(words: list[str], ctx: Ctx) -> list[Danger]:
    args, i, moved = words[1:], 0, False
    while i < len(args) and (args[i].startswith("-") or "=" in args[i]):
        if args[i] in ("-S", "--split-string") and i + 1 < len(args):
            return judge_script(" ".join(args[i + 1:]), ctx.child("env -S"))
        moved = moved or args[i].startswith(("-C", "--chdir"))
        i += 2 if args[i] in ("-u", "--unset", "-C", "--chdir") else 1
    return judge_argv(args[i:], ctx.child("env", cwd_known=ctx.cwd_known and not moved))


XARGS_VALUED = {"-n", "-P", "-d", "-L", "-s", "-E", "-a", "--arg-file", "--delimiter", "--max-args",
                "--max-procs", "--max-lines", "--max-chars", "--eof", "--process-slot-var"}


def _xargs(words: list[str], ctx: Ctx) -> list[Danger]:
    """The command xargs runs, with the items it reads from stdin as one more operand."""
    args, i, replace_str = words[1:], 0, None
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        arg = args[i]
        if arg == "-I":
            replace_str, i = (args[i + 1] if i + 1 < len(args) else "{}"), i + 1
        elif arg.startswith(("-I", "-i", "--replace")):
            replace_str = (arg.partition("=")[2] if arg.startswith("--") else arg[2:]) or "{}"
        elif arg in XARGS_VALUED:
            i += 1
        i += 1
    inner = args[i:] or ["echo"]
    inner = [w.replace(replace_str, STDIN) for w in inner] if replace_str else [*inner, STDIN]
    return judge_argv(inner, ctx.child("xargs"))


def _privileged(words: list[str], ctx: Ctx) -> list[Danger]:
    own = _changes("runs with root privileges")(words, ctx)
    if words[0].rsplit("/", 1)[-1] != "su":
        return own + _wrapped("ugpCDrtThU", ("--user", "--group", "--prompt"))(words, ctx)
    command = parse_options(words[1:], short_values="cgGs", long_values=("--command",)).value("-c", "--command")
    return own + (judge_script(command, ctx.child("su -c")) if command else [])


def _trap(words: list[str], ctx: Ctx) -> list[Danger]:
    """``trap HANDLER SIGNAL…``: the handler is shell text that runs later in this shell."""
    args = words[2:] if words[1:2] == ["--"] else words[1:]
    return [] if len(args) < 2 or args[0] in ("-", "-l", "-p", "") else judge_script(args[0], ctx.child("trap"))


def _command(words: list[str], ctx: Ctx) -> list[Danger]:
    if words[1:2] in (["-v"], ["-V"]):
        return []
    return judge_argv([w for w in words[1:] if w != "-p"], ctx.child(words[0]))


def _find(words: list[str], ctx: Ctx) -> list[Danger]:
    """find reads, unless it deletes; a list it writes must be a new file; what ``-exec`` runs is judged on the
    files it finds (``-execdir`` runs it in their folders)."""
    args, i = words[1:], 0
    while i < len(args) and (args[i] in ("-H", "-L", "-P", "-D") or args[i].startswith("-O")):
        i += 2 if args[i] == "-D" else 1
    start = i
    while i < len(args) and not args[i].startswith("-") and args[i] not in ("(", "!", ","):
        i += 1
    roots, dangers = args[start:i] or ["."], []
    while i < len(args):
        if args[i] == "-delete":
            dangers += _changes(f"deletes or writes files ({args[i]})")(words, ctx)
        elif args[i] in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            target = args[i + 1] if i + 1 < len(args) else ""
            new = create.check(target, "file", ctx) is None
            dangers += [create.made(words, [(target, "file")], ctx)] if new else _changes(
                f"deletes or writes files ({args[i]})")(words, ctx)
            i += 2 if args[i] == "-fprintf" else 1
        elif args[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(args) and not (args[j] == ";" or (args[j] == "+" and args[j - 1] == "{}")):
                j += 1
            inner = ctx.child(f"find {args[i]}", found_roots=roots,
                              cwd_known=ctx.cwd_known and args[i] in ("-exec", "-ok"))
            dangers += judge_argv(args[i + 1:j], inner)
            i = j
        i += 1
    return dangers


def _shell(words: list[str], ctx: Ctx) -> list[Danger]:
    """sh/bash/zsh: ``-c STRING``, a here-string or a piped script is judged; a script file runs unseen."""
    args, i, has_c = words[1:], 0, False
    while i < len(args) and args[i].startswith(("-", "+")) and args[i] not in ("-", "--"):
        has_c = has_c or (not args[i].startswith("--") and "c" in args[i] and args[i] not in ("-o", "+o"))
        i += 2 if args[i] in ("-o", "+o", "-O", "+O") else 1
    operands = args[i:]
    if has_c:
        return judge_script(operands[0], ctx.child(f"{words[0]} -c")) if operands else []
    if operands and operands[0] not in ("-", "--", "-s"):
        return _changes(f"runs the script {operands[0]}, whose effect the command text does not show")(words, ctx)
    script = shown_stdin(ctx)
    if script is not None:
        return judge_script(script, ctx.child(f"{words[0]} (stdin)"))
    return _changes("runs commands read from stdin, which the command text does not show")(words, ctx)


def _interpreter(code_flags: tuple[str, ...]) -> Rule:
    """python, perl, node …: they may change anything; inline code is searched for what it sends."""

    def rule(words: list[str], ctx: Ctx) -> list[Danger]:
        args, code, script = words[1:], None, False
        for k, arg in enumerate(args):
            if not arg.startswith("-") or arg == "-":
                script = arg != "-"  # a script file: what follows is its own arguments
                break
            if k + 1 < len(args) and (arg in code_flags or (arg[1:].isalpha() and f"-{arg[-1]}" in code_flags)):
                code = args[k + 1]
                break
        code = code if code is not None or script else shown_stdin(ctx)
        if code is None:
            return _changes("runs code the command text does not show")(words, ctx)
        return network.code(code, words, ctx) + _changes("runs inline code, which may change anything")(words, ctx)

    return rule


ENV_RUNNERS = {"uv": "run", "poetry": "run", "pipenv": "run", "pdm": "run", "hatch": "run", "bundle": "exec",
               "conda": "run", "rye": "run"}


def _env_runner(words: list[str], ctx: Ctx) -> list[Danger]:
    """``uv run CMD``, ``bundle exec CMD``: the manager may sync its environment, and CMD runs."""
    verb, own = ENV_RUNNERS[words[0].rsplit("/", 1)[-1]], _changes("may install or change packages")(words, ctx)
    runs = [f"{words[0]} {verb}", *words[words.index(verb) + 1:]] if verb in words[1:] else []
    return own + (_wrapped("pne", ("--with", "--python", "--name", "--env"))(runs, ctx) if runs else [])


WRAPPERS: dict[str, Rule] = {
    **{n: _privileged for n in ("sudo", "doas", "pkexec", "su")},
    "env": _env, "xargs": _xargs, "parallel": _xargs, "trap": _trap,
    "eval": lambda words, ctx: judge_script(" ".join(words[1:]), ctx.child("eval")),
    "watch": lambda words, ctx: judge_script(" ".join(parse_options(words[1:], "nqd", ("--interval",)).operands),
                                             ctx.child("watch")),
    "command": _command, "builtin": _command, "exec": _command, "find": _find,
    "timeout": _wrapped("sk", ("--signal", "--kill-after"), leading=1),
    **{n: _wrapped() for n in ("time", "unbuffer", "chronic", "caffeinate", "proxychains", "torsocks", "busybox",
                               "fakeroot")},
    **{n: _wrapped(own="keeps running after the shell ends") for n in ("nohup", "setsid")},
    "nice": _wrapped("n", ("--adjustment",)), "ionice": _wrapped("cnp", ("--class", "--classdata")),
    "stdbuf": _wrapped("ioe", ("--input", "--output", "--error")),
    "strace": _wrapped("oespEu", own="writes its trace"), "ltrace": _wrapped("oesEu", own="writes its trace"),
    "taskset": _wrapped(leading=1), "chrt": _wrapped(leading=1),
    **{n: _env_runner for n in ENV_RUNNERS},
    "perl": _interpreter(("-e", "-E")), "ruby": _interpreter(("-e",)), "lua": _interpreter(("-e",)),
    "node": _interpreter(("-e", "--eval", "-p", "--print")), "nodejs": _interpreter(("-e", "--eval", "-p", "--print")),
    "php": _interpreter(("-r",)), "osascript": _interpreter(("-e",)), "Rscript": _interpreter(("-e",)),
}
