"""The Law-1 dispatcher: one simple command at a time, wrappers unwrapped.

``judge_script`` walks every simple command of a parsed line (and every substitution it
hides), follows ``cd`` so relative paths resolve where they would, and judges
redirections.  ``judge_argv`` looks the command up in the rule tables of
``rules_files``, ``rules_net``, ``rules_system``, ``rules_code`` (programs that run code they
are given) and ``rules_daemon`` (database and container clients); wrappers (sudo, env, nohup, timeout, xargs,
``sh -c``, eval, ``python -c`` …) are unwrapped here and the wrapped command judged
with the same rules, so hiding a command never makes it safer.  ``rules_exfil`` adds its
rule to every command; ``variables`` follows the variables a script sets, command by command.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from artoo.tasks.law1 import rules_code, rules_daemon, rules_exfil, rules_files, rules_net, rules_system, variables
from artoo.tasks.law1.core import (
    STDIN,
    Ctx,
    Danger,
    danger,
    is_system_path,
    parse_options,
    resolve,
    targets_text,
    write_dangers,
)
from artoo.tasks.shell.parse import PLACEHOLDER, ParseError, Script, Simple, parse, strip_prefix

MAX_DEPTH = 12
Rule = Callable[[list[str], Ctx], list[Danger]]


def judge_script(text: str, ctx: Ctx) -> list[Danger]:
    """Every danger in a command line, substitutions and wrapped commands included."""
    if ctx.depth > MAX_DEPTH:
        return [Danger("hidden", text[:60], "nests commands too deeply to judge", [])]
    try:
        script = parse(text)
    except ParseError as exc:
        unread = Danger("cannot parse", text[:60], f"is not valid shell ({exc}); an unreadable command is "
                        "treated as irreversible", [])
        return [unread, *_judge_parsed(parse(text, partial=True), ctx)]
    return _judge_parsed(script, ctx)


def _judge_parsed(script: Script, ctx: Ctx) -> list[Danger]:
    ctx = replace(ctx)  # ``cd`` and the known variables move on this copy only
    scope = variables.Scope(script.commands, ctx.known)
    pending = dict(enumerate(script.substitutions))
    dangers: list[Danger] = []
    for simple in script.commands:
        ctx.known = scope.view(simple)
        for index in _substitutions_in(simple):  # judged where they run: after a cd, with the variables
            if index in pending:
                dangers += judge_script(pending.pop(index), ctx.child("$( … )"))
        dangers += judge_simple(simple, ctx)
        scope.after(simple)
    ctx.known = {}
    for inner in pending.values():
        dangers += judge_script(inner, ctx.child("$( … )"))
    return dangers


def _substitutions_in(simple: Simple) -> list[int]:
    texts = [*simple.words, *(r.target for r in simple.redirects), simple.here_input or ""]
    return [int(m.group(2)) for t in texts for m in PLACEHOLDER.finditer(t) if m.group(1) != "DOC"]


def judge_simple(simple: Simple, ctx: Ctx) -> list[Danger]:
    """Judge one simple command with its redirections; a ``cd`` moves ctx.cwd for what follows."""
    words = strip_prefix(simple.words)
    here = replace(ctx, simple=simple)
    dangers = [d for r in simple.redirects for d in _judge_redirect(r.op, r.target, words, here)]
    if not words:
        return dangers
    if words[0] in ("cd", "pushd"):
        target = words[1] if len(words) > 1 else "~"
        ctx.cwd = None if target == "-" else resolve(target, ctx)
        return dangers
    return dangers + judge_argv(words, here)


def _judge_redirect(op: str, target: str, words: list[str], ctx: Ctx) -> list[Danger]:
    shown = [*(words or [""]), op, target]
    return write_dangers(shown, [target], ctx, append=op in (">>", "&>>"))


def judge_argv(words: list[str], ctx: Ctx) -> list[Danger]:
    """Judge one command's words (words[0] is the command)."""
    if not words:
        return []
    name = words[0].rsplit("/", 1)[-1]
    ctx.seen.append(name)
    if PLACEHOLDER.search(words[0]) or "$" in words[0] or "`" in words[0]:
        return [danger("hidden", words, "runs a command whose name is only known at run time",
                       [], ctx)]
    if words[1:] in (["--help"], ["--version"], ["-h"]):
        return []
    rule = rule_for(name)
    if rule is None and "/" in words[0]:
        rule = _program_file
    return (rule(words, ctx) if rule else []) + rules_exfil.judge(name, words, ctx)


def _program_file(words: list[str], ctx: Ctx) -> list[Danger]:
    """``./cleanup.sh``, ``bin/tool``: a program of the user's own, not a system command, runs unseen."""
    path = resolve(words[0], ctx)
    if path is not None and is_system_path(path):
        return []  # /usr/bin/ls and friends: known commands, judged by name
    return rules_code.runs_file(words, words[0], ctx, "the program")


def rule_for(name: str) -> Rule | None:
    """The rule for a command name (exact, or by family such as mkfs.ext4, python3.11)."""
    if name in RULES:
        return RULES[name]
    if re.fullmatch(r"python[0-9.]*|pypy[0-9.]*", name):
        return _python
    if re.fullmatch(r"(bash|sh|zsh|dash|ksh|mksh|ash|fish)[0-9.]*", name):
        return _shell
    return rules_system.family_rule(name)


# ---------------------------------------------------------------- wrappers
def _wrapped(skip_values: str = "", long_values: tuple[str, ...] = (), leading: int = 0) -> Rule:
    """A wrapper whose own options (and ``leading`` operands) precede the wrapped command."""

    def rule(words: list[str], ctx: Ctx) -> list[Danger]:
        args = words[1:]
        i = 0
        while i < len(args) and args[i].startswith("-") and args[i] != "-":
            opt = args[i]
            i += 1
            if opt == "--":
                break
            takes_value = opt in long_values or (len(opt) == 2 and opt[-1] in skip_values)
            i += 1 if takes_value else 0
        inner = args[i + leading:]
        return ctx.recurse_argv(inner, ctx.child(words[0]))

    return rule


def _env(words: list[str], ctx: Ctx) -> list[Danger]:
    args = words[1:]
    i, cwd = 0, ctx.cwd
    while i < len(args):
        arg = args[i]
        if arg in ("-u", "--unset", "-C", "--chdir"):
            if arg in ("-C", "--chdir") and i + 1 < len(args):
                cwd = resolve(args[i + 1], ctx)
            i += 2
        elif arg in ("-S", "--split-string") and i + 1 < len(args):
            return ctx.recurse_text(" ".join(args[i + 1:]), ctx.child("env -S", cwd=cwd))
        elif arg.startswith("-") or "=" in arg:
            i += 1
        else:
            break
    return ctx.recurse_argv(args[i:], ctx.child("env", cwd=cwd))


XARGS_VALUED = {"-n", "-P", "-d", "-L", "-s", "-E", "-a", "--arg-file", "--delimiter", "--max-args",
                "--max-procs", "--max-lines", "--max-chars", "--eof", "--process-slot-var"}


def _xargs(words: list[str], ctx: Ctx) -> list[Danger]:
    """The command xargs runs, with the items it reads from stdin as an extra (unknown) operand."""
    args, i, replace_str = words[1:], 0, None
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        arg = args[i]
        if arg == "-I":
            replace_str = args[i + 1] if i + 1 < len(args) else "{}"
            i += 1
        elif arg.startswith(("-I", "-i")):
            replace_str = arg[2:] or "{}"
        elif arg.startswith("--replace"):
            replace_str = arg.partition("=")[2] or "{}"
        elif arg in XARGS_VALUED:
            i += 1
        i += 1
    inner = args[i:] or ["echo"]
    inner = [w.replace(replace_str, STDIN) for w in inner] if replace_str else [*inner, STDIN]
    return ctx.recurse_argv(inner, ctx.child("xargs", stdin_paths=_upstream_paths(ctx)))


def _upstream_paths(ctx: Ctx) -> list[str]:
    """Path-like strings in the earlier stages of the pipeline: where xargs' items likely live."""
    paths: list[str] = []
    stage = ctx.simple.pipe_from if ctx.simple else None
    while stage is not None:
        for word in stage.words[1:]:
            paths += re.findall(r"(?:^|(?<=[^\w.~-]))(~?/[\w.+/-]*)", word)
        stage = stage.pipe_from
    return paths or list(ctx.stdin_paths)


def _privileged(words: list[str], ctx: Ctx) -> list[Danger]:
    name = words[0].rsplit("/", 1)[-1]
    if name == "su":
        opts = parse_options(words[1:], short_values="cgGs", long_values=("--command",))
        command = opts.value("-c", "--command")
        inner = ctx.recurse_text(command, ctx.child("su -c")) if command else []
    else:
        inner = _wrapped("ugpCDrtThU", ("--user", "--group", "--prompt"))(words, ctx)
    own = danger("system", words, "runs with root privileges", [], ctx)
    return [own] + inner


def _eval(words: list[str], ctx: Ctx) -> list[Danger]:
    return ctx.recurse_text(" ".join(words[1:]), ctx.child("eval"))


def _watch(words: list[str], ctx: Ctx) -> list[Danger]:
    opts = parse_options(words[1:], short_values="nqd", long_values=("--interval",))
    return ctx.recurse_text(" ".join(opts.operands), ctx.child("watch"))


def _command(words: list[str], ctx: Ctx) -> list[Danger]:
    if len(words) > 1 and words[1] in ("-v", "-V"):
        return []
    return ctx.recurse_argv([w for w in words[1:] if w != "-p"], ctx.child(words[0]))


def _find_in_shell_stdin(ctx: Ctx) -> str | None:
    """The script a stdin-reading shell would run, when the text shows it (echo/printf/here-string)."""
    simple = ctx.simple
    if simple is None:
        return None
    if simple.here_input is not None:
        return simple.here_input
    prev = simple.pipe_from
    if prev is not None and prev.words and prev.words[0] in ("echo", "printf"):
        return " ".join(w for w in prev.words[1:] if not w.startswith("-"))
    return None


def _shell(words: list[str], ctx: Ctx) -> list[Danger]:
    """sh/bash/zsh: judge ``-c STRING``, a here-string or piped script; a script file is not read."""
    args, i, has_c = words[1:], 0, False
    while i < len(args) and args[i].startswith(("-", "+")) and args[i] not in ("-", "--"):
        if args[i] in ("-o", "+o", "-O", "+O"):
            i += 1
        elif not args[i].startswith("--") and "c" in args[i]:
            has_c = True
        i += 1
    operands = args[i:]
    if has_c:
        return ctx.recurse_text(operands[0], ctx.child(f"{words[0]} -c")) if operands else []
    if operands and operands[0] not in ("-", "--", "-s"):
        return rules_code.runs_file(words, operands[0], ctx)  # a script file: its text is not the command's
    script = _find_in_shell_stdin(ctx)
    if script is not None:
        return ctx.recurse_text(script, ctx.child(f"{words[0]} (stdin)"))
    source = ctx.simple.pipe_from.words if ctx.simple and ctx.simple.pipe_from else []
    origin = f" produced by `{' '.join(source)[:60]}`" if source else ""
    return [danger("hidden", words, f"runs commands read from stdin{origin}, which cannot be judged",
                   [], ctx)]


def _python(words: list[str], ctx: Ctx) -> list[Danger]:
    """``python -c CODE`` (best effort) and ``python -m pip``; a script file is not read."""
    args, i = words[1:], 0
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        arg = args[i]
        for k, letter in enumerate(arg[1:], start=1):
            if letter in "cm":
                value = arg[k + 1:] or (args[i + 1] if i + 1 < len(args) else "")
                rest = args[i + (1 if arg[k + 1:] else 2):]
                if letter == "c":
                    return rules_system.judge_code(value, words, ctx)
                if value in ("pip", "pip3"):
                    return rules_system.RULES["pip"](["pip", *rest], ctx.child(f"{words[0]} -m pip"))
                return []
            if letter in "WX" and k == len(arg) - 1:
                i += 1
        i += 1
    if i < len(args) and args[i] != "-":
        return rules_code.runs_file(words, args[i], ctx)
    return _stdin_code(words, ctx)


def _stdin_code(words: list[str], ctx: Ctx) -> list[Danger]:
    """An interpreter without a script reads its program from stdin: judge it when the text shows it."""
    script = _find_in_shell_stdin(ctx)
    if script is not None:
        return rules_system.judge_code(script, words, ctx)
    if ctx.simple is not None and ctx.simple.pipe_from is not None:
        return [danger(rules_code.RUNS, words, "runs code read from stdin, which cannot be judged", [], ctx)]
    return []


def _perl(words: list[str], ctx: Ctx) -> list[Danger]:
    args = words[1:]
    dangers: list[Danger] = []
    clusters = [a for a in args if a.startswith("-") and not a.startswith("--")]
    if any("i" in c[1:].split("e")[0] for c in clusters):
        files = [a for a in args if not a.startswith("-")][1:]
        dangers.append(danger("overwrite", words, f"edits files in place: {targets_text(files, ctx)}",
                              files, ctx))
    code = next((args[k + 1] for k, a in enumerate(args[:-1]) if a.startswith("-") and a[-1] in "eE"),
                None)
    if code is not None:
        dangers += rules_system.judge_code(code, words, ctx)
    elif not dangers:
        script = rules_code.first_operand(args, ("-I", "-M", "-m"))
        dangers += rules_code.runs_file(words, script, ctx) if script not in (None, "-") else []
    return dangers


def _flock(words: list[str], ctx: Ctx) -> list[Danger]:
    for flag in ("-c", "--command"):
        if flag in words[:-1]:
            return ctx.recurse_text(words[words.index(flag) + 1], ctx.child("flock -c"))
    return _wrapped("w", ("--timeout",), leading=1)(words, ctx)


def _code_flag(flags: tuple[str, ...], valued: tuple[str, ...] = ()) -> Rule:
    """ruby -e, node -e …: inline code judged best effort; a script file runs unseen (rules_code)."""
    return rules_code.interpreter(flags, valued, inline=rules_system.judge_code)


def _env_manager(words: list[str], ctx: Ctx) -> list[Danger]:
    """uv/conda: installs (rules_system) and ``run CMD`` (rules_code) judged together."""
    return rules_system.RULES[words[0].rsplit("/", 1)[-1]](words, ctx) + rules_code.env_runner(words, ctx)


def _package_manager(words: list[str], ctx: Ctx) -> list[Danger]:
    """npm/pnpm/yarn/bun: installs and publishes (rules_system), scripts and fetched code (rules_code)."""
    return rules_system.RULES["npm"](words, ctx) + rules_code.package_scripts(words, ctx)


RULES: dict[str, Rule] = {
    **rules_files.RULES,
    **rules_net.RULES,
    **rules_system.RULES,
    **rules_code.RULES,
    **rules_daemon.RULES,
    **{n: _package_manager for n in ("npm", "pnpm", "yarn", "bun")},
    **{n: _env_manager for n in ("uv", "conda")},
    "cargo": lambda words, ctx: rules_system.RULES["cargo"](words, ctx) + rules_code.project_runner(words, ctx),
    "sudo": _privileged, "doas": _privileged, "pkexec": _privileged, "su": _privileged,
    "env": _env, "timeout": _wrapped("sk", ("--signal", "--kill-after"), leading=1),
    "xargs": _xargs, "parallel": _xargs, "eval": _eval,
    "watch": _watch, "command": _command, "builtin": _command, "exec": _command,
    "nohup": _wrapped(), "time": _wrapped(), "setsid": _wrapped(), "unbuffer": _wrapped(),
    "chronic": _wrapped(), "fakeroot": _wrapped(), "caffeinate": _wrapped(),
    "proxychains": _wrapped(), "torsocks": _wrapped(), "busybox": _wrapped(),
    "nice": _wrapped("n", ("--adjustment",)), "ionice": _wrapped("cnp", ("--class", "--classdata")),
    "stdbuf": _wrapped("ioe", ("--input", "--output", "--error")),
    "strace": _wrapped("oespEu"), "ltrace": _wrapped("oesEu"),
    "taskset": _wrapped("", (), leading=1), "chrt": _wrapped("", (), leading=1),
    "flock": _flock,
    "perl": _perl, "ruby": _code_flag(("-e",), ("-I", "-r")),
    "node": _code_flag(("-e", "--eval", "-p", "--print"), ("-r", "--require", "--import")),
    "nodejs": _code_flag(("-e", "--eval", "-p", "--print"), ("-r", "--require", "--import")),
    "php": _code_flag(("-r",), ("-c", "-d")), "lua": _code_flag(("-e",)), "osascript": _code_flag(("-e",)),
}
