"""Law 1's table of programs whose form decides: which subcommands and options only read, which only create new
paths, and which make the program write, delete or run something.

A program the table lists only reads in the forms its entry allows (``git status``, ``tar -t``, ``sed -n 1p``,
``terraform plan``, ``sqlite3 db 'SELECT …'``), only creates in the forms that name new paths (``mkdir``,
``touch new.txt``, ``sort -o new.txt``), and in every other form (an unlisted subcommand, an option that
writes or runs a program, a program text that writes) it is "not a command known to only read", as before.
The words come from the bash grammar (``artoo.tasks.shell``), never from the raw text.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Literal

from artoo.tasks.law1 import create
from artoo.tasks.law1.core import Ctx, Danger, Options, danger, parse_options, shown_stdin
from artoo.tasks.law1.create import Kind
from artoo.tasks.law1.daemons import read_only_sql
from artoo.tasks.law1.network import CURL_LOCAL, CURL_LONG, CURL_VALUES, is_remote
from artoo.tasks.law1.readonly import TRUSTED_DIRS, harmless_sink
from artoo.tasks.shell.parse import PLACEHOLDER

Effect = str | list[tuple[str, Kind]]
"""What a program text checker found: why it may change (a str), or the paths it creates (empty: it only reads)."""
Code = Callable[[Options, Ctx], Effect]
Make = Literal["", "dirs", "files", "second"]


@dataclass(frozen=True)
class Form:
    """One program's (or subcommand's) table row: which of its options and operands keep it to reading or creating.

    Checked in this order: an option in ``writes`` (or an unlisted subcommand) means it may change; with
    ``needs_dry`` it may change unless an option in ``dry`` is given; with ``operands="change"`` an operand
    changes something unless a ``dry`` option makes operands patterns; ``code`` judges the program text it
    runs; what ``outputs`` and ``makes`` name must be new paths (``keeps``: it never replaces one)."""

    values: str = ""
    """Short options that take a value (``-o FILE``)."""
    long_values: tuple[str, ...] = ()
    """Long options that take a value (``--output FILE``)."""
    writes: tuple[str, ...] = ()
    """Options that make it write, delete, or run a program (``sed -i``, ``find -delete``, ``curl -K``)."""
    dry: tuple[str, ...] = ()
    """Options under which it only reads (``tar -t``, ``rsync -n``, ``git clean -n``); ``-x=v`` matches one word."""
    needs_dry: bool = False
    keeps: tuple[str, ...] = ()
    """Options under which it never replaces an existing path (``cp -n``)."""
    outputs: tuple[str, ...] = ()
    """Options whose value is a file it writes (``sort -o``): it must be new."""
    makes: Make = ""
    """What its operands become: ``dirs`` (mkdir), ``files`` (touch, tee), ``second`` (xxd IN OUT)."""
    operands: Literal["read", "change"] = "read"
    verbs: Mapping[str, Form | None] | None = None
    """Subcommands: each verb's own row, None for a verb that changes; a verb not listed is ``other``."""
    other: Form | None = None
    bare: Form | None = None
    """The row when no verb is given (``git stash`` pushes: None; ``git remote`` lists)."""
    chdir: tuple[str, ...] = ()
    """Global options that move the working directory (``git -C``): relative outputs land elsewhere."""
    code: Code | None = None
    single_dash: bool = False
    """Long options take one dash (``terraform plan -out=x``, ``sqlite3 -cmd X``)."""
    old_style: bool = False
    """A first word without a dash is a cluster of option letters (``tar czf out.tgz dir``)."""
    filter: bool = False
    """Without operands it filters stdin to stdout (``gzip > x.gz``): it only reads."""
    known: tuple[str, ...] = ()
    """Complete long options that are also the start of a writing one (``tar --list``, ``--listed-incremental``):
    given whole they are themselves, not an abbreviation (as are ``dry``, ``keeps``, ``outputs``, ``long_values``)."""

    def complete(self) -> frozenset[str]:
        """Long options known by their full name, which GNU never reads as an abbreviation of another."""
        return frozenset((*self.known, *self.dry, *self.keeps, *self.outputs, *self.long_values))


def judge(words: list[str], ctx: Ctx) -> list[Danger] | None:
    """The Law-1 dangers of a program the table lists; None when it is not listed or its form may change
    (then the caller's "not a command known to only read" stands)."""
    program = words[0]
    if "/" in program and not program.startswith(TRUSTED_DIRS):
        return None
    form = FORMS.get(program.rsplit("/", 1)[-1])
    return None if form is None else _judge(form, words, words[1:], ctx)


def _judge(form: Form, words: list[str], args: list[str], ctx: Ctx) -> list[Danger] | None:
    if form.old_style and args and not args[0].startswith("-"):
        args = _old_style(args, form.values)
    if form.verbs is not None or form.bare is not None:
        return _verb(form, words, args, ctx)
    opts = _parse(form, args)
    targets = _outputs(form, opts)
    if _given(opts, args, form.writes, prefix=True, complete=form.complete()) or targets is None:
        return None
    if _given(opts, args, form.dry, prefix=False) or (form.filter and not opts.operands):
        return _creations(words, targets, ctx)  # a dry run or a filter: only what its outputs name
    if form.needs_dry or (form.operands == "change" and opts.operands):
        return None
    if form.code is not None:
        effect = form.code(opts, ctx)
        if isinstance(effect, str):
            return [danger("may change", words, effect, [], ctx)]
        targets += effect
    keeps = bool(_given(opts, args, form.keeps, prefix=False))
    operands = [o for o in opts.operands if o != "-"]
    if form.makes == "dirs":
        targets += [(o, "dir") for o in operands]
    elif form.makes == "files":
        targets += [(o, "file") for o in operands]
    elif form.makes == "second" and len(operands) > 1:
        targets.append((operands[1], "file"))
    return _creations(words, targets, ctx, keeps)


def _verb(form: Form, words: list[str], args: list[str], ctx: Ctx) -> list[Danger] | None:
    """``git [global options] VERB [options]``: the global options, then the verb's own row."""
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        if args[i] == "--":
            i += 1
            break
        name = args[i].split("=", 1)[0] if form.single_dash or args[i].startswith("--") else args[i][:2]
        if _matches(name, args[i], form.writes, prefix=name not in form.complete()):
            return None
        if name in form.chdir:
            ctx = replace(ctx, cwd_known=False)
        takes = name in form.long_values or (len(args[i]) == 2 and args[i][1:] in form.values)
        i += 2 if takes and "=" not in args[i] else 1
    if i >= len(args):
        row = form.bare
    elif args[i] in (form.verbs or {}):
        row = (form.verbs or {})[args[i]]
    else:
        row = form.other
    if row is None:
        return None
    return _judge(row, words, args[i + 1:], ctx)


def _parse(form: Form, args: list[str]) -> Options:
    shorts = "".join(o[1] for o in form.outputs if len(o) == 2 and not form.single_dash)
    longs = form.long_values + tuple(o for o in form.outputs if len(o) > 2 or form.single_dash)
    if not form.single_dash:
        return parse_options(args, form.values + shorts, longs)
    opts, i = Options(set(), {}, []), 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            opts.operands.extend(args[i + 1:])
            break
        if arg.startswith("-") and len(arg) > 1:
            name, eq, value = arg.lstrip("-").partition("=")
            name = "-" + name
            if eq or (name in longs and i + 1 < len(args)):
                opts.values.setdefault(name, []).append(value if eq else args[i + 1])
                i += 0 if eq else 1
            else:
                opts.flags.add(name)
        else:
            opts.operands.append(arg)
        i += 1
    return opts


def _given(opts: Options, args: list[str], names: tuple[str, ...], prefix: bool,
           complete: frozenset[str] = frozenset()) -> str | None:
    """The first of ``names`` given; long options also by an abbreviation GNU would take (``--in-pl``), unless
    the word is a complete option of its own."""
    for key in [*opts.flags, *opts.values]:
        if _matches(key, key, names, prefix and key not in complete):
            return key
    return next((a for a in args if "=" in a and a in names), None)


def _matches(key: str, word: str, names: tuple[str, ...], prefix: bool) -> bool:
    if key in names or word in names:
        return True
    return prefix and key.startswith("--") and len(key) > 3 and any(n.startswith(key) for n in names)


def _outputs(form: Form, opts: Options) -> list[tuple[str, Kind]] | None:
    """The files its output options name; None when one is abbreviated past knowing its value."""
    found: list[tuple[str, Kind]] = []
    for key in [*opts.flags, *opts.values]:
        hit = _matches(key, key, form.outputs, prefix=not form.single_dash)
        if hit and key in opts.flags:
            return None
        if hit:
            found += [(v, "file") for v in opts.values[key]]
    return found


def _creations(words: list[str], targets: list[tuple[str, Kind]], ctx: Ctx, keeps: bool = False) -> list[Danger]:
    """No danger when it creates nothing; a quiet record when every target is a new path; else why not."""
    targets = [(w, k) for w, k in targets if not (k in ("file", "copy") and harmless_sink(w))]
    for word, kind in targets:
        why = create.check(word, kind, ctx, keeps=keeps)
        if why is not None:
            return [create.refused(words, word, why, ctx)]
    return [create.made(words, targets, ctx)] if targets else []


def _old_style(args: list[str], valued: str) -> list[str]:
    """``tar czf out.tgz dir`` → ``tar -c -z -f out.tgz dir``: each valued letter takes the next word in turn."""
    letters, rest, out = args[0], list(args[1:]), []
    for letter in letters:
        out.append("-" + letter)
        if letter in valued and rest:
            out.append(rest.pop(0))
    return out + rest


# ---------------------------------------------------------------- program texts: awk, sed, SQL
AWK_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
AWK_REGEX_AFTER = set("(,~!{};&|=\n") | {""}


def _awk(opts: Options, ctx: Ctx) -> Effect:
    """awk runs what its program says: ``system()``, a pipe (``print | "sh"``, ``"cmd" | getline``), ``@load``
    and printing into a file write or run; printing to stdout or /dev/stderr only reads."""
    sources = opts.values.get("-e", []) + opts.values.get("--source", [])
    program = "\n".join(sources) if sources else (opts.operands[0] if opts.operands else None)
    if program is None:
        return "runs an awk program the command text does not show"
    if "--sandbox" in opts.flags:
        return []  # gawk refuses system(), pipes and redirections itself
    if PLACEHOLDER.search(program):
        return "runs an awk program computed at run time"
    strings: list[str] = []
    text = AWK_STRING.sub(lambda m: strings.append(m.group(0)[1:-1]) or f" S{len(strings) - 1} ", program)
    text = _strip_regexes(text).replace("||", " or ")
    if re.search(r"\bsystem\s*\(|@|\|", text):
        return "runs a command from its awk program (system(), a pipe, @load or an indirect call)"
    made: list[tuple[str, Kind]] = []
    for statement in re.finditer(r"\bprintf?\b([^;}\n]*)", text):
        depth, args = 0, statement.group(1)
        for k, char in enumerate(args):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if char == ">" and depth <= 0:
                target = re.fullmatch(r">?\s*S(\d+)\s*", args[k + 1:])
                if target is None:
                    return "writes into a file its awk program computes (print > …)"
                made.append((strings[int(target.group(1))], "file"))
                break
    return made


def _strip_regexes(text: str) -> str:
    """Drop awk regex literals (``/a|b/``) where a regex may start, so their ``|`` is no pipe."""
    out, i, prev = [], 0, ""
    while i < len(text):
        char = text[i]
        if char == "/" and prev in AWK_REGEX_AFTER:
            j = i + 1
            while j < len(text) and text[j] != "/":
                j += 2 if text[j] == "\\" else 1
            out.append(" R ")
            i, prev = j + 1, "R"
            continue
        out.append(char)
        if not char.isspace():
            prev = char
        i += 1
    return "".join(out)


SED_PLAIN = set("=dDgGhHnNpPxzFv")
SED_LABEL = set("btT:")
SED_TEXT = set("aic")


def _sed(opts: Options, ctx: Ctx) -> Effect:
    """sed only prints unless its script writes (``w``, ``s///w``) or runs (``e``, ``s///e``); ``r`` reads."""
    scripts = opts.values.get("-e", []) + opts.values.get("--expression", [])
    if not scripts:
        scripts = opts.operands[:1]
    if not scripts:
        return "runs a sed script the command text does not show"
    if "--sandbox" in opts.flags:
        return []
    for script in scripts:
        why = _sed_script(script)
        if why:
            return why
    return []


def _sed_script(script: str) -> str | None:
    """Walk a sed script command by command (addresses skipped); why it writes or runs, or None."""
    i, n = 0, len(script)
    while i < n:
        while i < n and script[i] in " \t\n;{}!":
            i += 1
        if i >= n:
            return None
        i = _sed_address(script, i)
        while i < n and script[i] in " \t!":
            i += 1
        if i >= n:
            return None
        command, i = script[i], i + 1
        if command in "{}":
            continue
        if command == "#":
            end = script.find("\n", i)
            i = n if end < 0 else end
            continue
        if command in SED_PLAIN:
            continue
        if command in "qQLl":
            while i < n and script[i].isdigit():
                i += 1
        elif command in SED_LABEL or command in "rR":
            while i < n and script[i] not in ";\n":
                i += 1
        elif command in SED_TEXT:
            while i < n and script[i] != "\n":
                i += 2 if script[i] == "\\" else 1
        elif command in "wW":
            end = script.find("\n", i)
            target = script[i:end if end >= 0 else n].strip()
            if not harmless_sink(target):
                return f"writes into {target or 'a file'} from its sed script ({command})"
            i = n if end < 0 else end
        elif command == "e":
            return "runs a command from its sed script (e)"
        elif command in "sy":
            if i >= n or script[i] in "\\\n":
                return "has a sed script the judge cannot read"
            delim, parts = script[i], 0
            i += 1
            while i < n and parts < 2:
                if script[i] == "\\":
                    i += 2
                    continue
                parts += script[i] == delim
                i += 1
            if parts < 2:
                return "has a sed script the judge cannot read"
            if command == "s":
                start = i
                while i < n and script[i] not in ";\n}":
                    if script[i] in "we":
                        flag = script[start:].lstrip()
                        return f"writes or runs from its sed script (s///{flag[:12]})"
                    i += 1
        else:
            return f"has a sed command the judge does not know ({command})"
    return None


def _sed_address(script: str, i: int) -> int:
    """Past one address or range (``1``, ``$``, ``/re/I``, ``\\%re%``, ``1,+3``, ``0~2``)."""
    for _ in range(2):
        n = len(script)
        if i < n and (script[i] == "/" or script[i] == "\\"):
            delim = script[i + 1] if script[i] == "\\" and i + 1 < n else "/"
            i += 2 if script[i] == "\\" else 1
            while i < n and script[i] != delim:
                i += 2 if script[i] == "\\" else 1
            i += 1
            while i < n and script[i] in "IM":
                i += 1
        else:
            while i < n and (script[i].isdigit() or script[i] in "$~+"):
                i += 1
        if i < n and script[i] == ",":
            i += 1
            continue
        break
    return i


def _sqlite(opts: Options, ctx: Ctx) -> Effect:
    """sqlite3 DB SQL…: every statement (and ``-cmd``) must be a plain query; SQL from stdin must be shown."""
    statements = opts.operands[1:] + opts.values.get("-cmd", [])
    if len(opts.operands) < 2:
        shown = shown_stdin(ctx)
        if shown is None:
            return "runs SQL read from stdin, which the command text does not show"
        statements.append(shown)
    bad = next((s for s in statements if not read_only_sql(s)), None)
    return f"runs SQL that is not a plain query ({bad.strip()[:40]})" if bad is not None else []


def _git_config(opts: Options, ctx: Ctx) -> Effect:
    """``git config --get k``, ``git config k``, ``git config list``: reads; a key with a value sets it."""
    if opts.operands[:1] in (["get"], ["list"]) or len(opts.operands) <= 1:
        return []
    return "sets a git setting"


# ---------------------------------------------------------------- copies, archives, downloads
def _copy_targets(sources: list[str], dest: str, ctx: Ctx, into: bool) -> list[tuple[str, Kind]] | str:
    """What a copy creates: ``dest`` itself, or each source's name inside it when it is a directory."""
    if into or (create.existing_dir(dest, ctx) and len(sources) >= 1):
        if any(create.at_run_time(s, ctx) for s in sources):
            return f"copies names known only at run time into {dest}"
        return [(os.path.join(dest, os.path.basename(s.rstrip("/"))), "copy") for s in sources]
    return [(dest, "copy")]


CP_WRITES = ("-l", "--link", "-s", "--symbolic-link", "--attributes-only", "-u", "--remove-destination", "-f",
             "--force", "-b", "--backup")
"""cp options that link to a source (a later write would land in it) or replace or touch what exists."""


def _cp(opts: Options, ctx: Ctx) -> Effect:
    """cp makes new paths when its destination (or each name inside a destination directory) is new."""
    if opts.value("--update") not in (None, "none", "none-fail") or "--update" in opts.flags:
        return "replaces older files that exist (--update)"
    target_dir = opts.value("-t", "--target-directory")
    operands = [o for o in opts.operands if o != "-"]
    if target_dir is not None:
        return _copy_targets(operands, target_dir, ctx, into=True)
    if len(operands) < 2:
        return []
    if opts.has("-T", "--no-target-directory"):
        return [(operands[-1], "copy")]
    return _copy_targets(operands[:-1], operands[-1], ctx, into=len(operands) > 2)


RSYNC_VALUES = "efTBM"
RSYNC_LONG = ("--rsh", "--filter", "--exclude", "--include", "--temp-dir", "--rsync-path", "--files-from",
              "--exclude-from", "--include-from", "--password-file", "--link-dest", "--compare-dest", "--copy-dest",
              "--partial-dir", "--chmod", "--chown", "--usermap", "--groupmap", "--log-file", "--out-format",
              "--bwlimit", "--timeout", "--port", "--max-size", "--min-size", "--suffix", "--backup-dir")


RSYNC_CHANGES = ("--delete", "--del", "--delete-before", "--delete-during", "--delete-delay", "--delete-after",
                 "--delete-excluded", "--delete-missing-args", "--remove-source-files", "--remove-sent-files",
                 "--existing", "--backup-dir", "-b", "--backup", "--inplace", "--append", "--append-verify")
"""rsync options that delete or replace what exists; under ``-n`` they only show what they would do."""


def _rsync(opts: Options, ctx: Ctx) -> Effect:
    """rsync copies into a new destination (created), lists with one operand; a remote end is the network's."""
    given = [*opts.flags, *opts.values]
    hit = next((k for k in given if k in RSYNC_CHANGES or k.startswith("--delete")
                or (len(k) > 5 and any(c.startswith(k) for c in RSYNC_CHANGES))), None)
    if hit is not None:
        return f"deletes or replaces files ({hit})"
    operands = opts.operands
    if len(operands) < 2:
        return []
    dest = operands[-1]
    if is_remote(dest):
        return []  # nothing changes here; what it sends is the network rule's
    if create.existing_dir(dest, ctx) is not False and not opts.has("--ignore-existing"):
        return f"copies into {dest}, which may already hold files it would replace"
    return [(dest, "copy")]


TAR_VALUES = "fCbgIKLNTXVHF"
TAR_LONG = ("--file", "--directory", "--blocking-factor", "--listed-incremental", "--use-compress-program",
            "--starting-file", "--tape-length", "--newer", "--files-from", "--exclude-from", "--label", "--format",
            "--info-script", "--exclude", "--owner", "--group", "--mode", "--mtime", "--transform", "--xform",
            "--strip-components", "--suffix", "--index-file", "--to-command", "--checkpoint-action",
            "--rsh-command", "--volno-file", "--record-size", "--exclude-tag")


def _tar(opts: Options, ctx: Ctx) -> Effect:
    """tar lists (-t) and compares (-d); extracting to stdout (-xO) reads; creating (-c) makes its archive,
    which must be new; extracting to disk may replace paths the text does not show, so it asks."""
    archive = opts.value("-f", "--file")
    if archive is not None and ":" in archive.split("/", 1)[0] and not opts.has("--force-local"):
        return f"reads or writes the archive {archive} on another host"
    if opts.has("-t", "--list", "-d", "--diff", "--compare"):
        return []
    if opts.has("-x", "--extract", "--get"):
        if opts.has("-O", "--to-stdout"):
            return []
        return "extracts over paths the command text does not show, which may already exist"
    if opts.has("-c", "--create"):
        if archive is None:
            return "creates an archive where the command text does not say"
        return [(archive, "file")]
    return "is not one of tar's reading or creating forms"


def _compressor(keeps_by_default: bool) -> Code:
    """gzip, xz, zstd …: ``-c``, ``-l``, ``-t`` read; compressing next to the original only creates when the
    original stays (``-k``, or zstd's default) and nothing existing is forced over."""

    def code(opts: Options, ctx: Ctx) -> Effect:
        if opts.has("-c", "--stdout", "--to-stdout", "-l", "--list", "-t", "--test"):
            return []
        keeps = keeps_by_default and not opts.has("--rm") or opts.has("-k", "--keep")
        if not keeps:
            return "replaces each file with its (de)compressed form, deleting the original"
        return [(os.path.dirname(o) or ".", "place") for o in opts.operands if o != "-"]

    return code


def _wget(opts: Options, ctx: Ctx) -> Effect:
    """wget saves under a new name (``x.html.1`` beside an ``x.html``) unless -O names the file."""
    if opts.value("-O", "--output-document") is not None:
        return []
    return [(opts.value("-P", "--directory-prefix") or ".", "place")]


def _mktemp(opts: Options, ctx: Ctx) -> Effect:
    """mktemp makes a path that did not exist, in /tmp unless told where."""
    where = opts.value("-p", "--tmpdir")
    template = opts.operands[0] if opts.operands else ""
    if where is None:
        where = "/tmp" if not template or opts.has("-t") else (os.path.dirname(template) or ".")
    return [(where, "place")]


def _pager(opts: Options, ctx: Ctx) -> Effect:
    """less and more show files; a ``+cmd`` operand runs pager commands, and ``!`` in them runs a shell."""
    initial = next((o for o in opts.operands if o.startswith("+")), None)
    return [] if initial is None else f"runs the pager command {initial} first"


def _ip(opts: Options, ctx: Ctx) -> Effect:
    """``ip addr``, ``ip route show``: the object's default command lists; any other command changes the host."""
    batch = next((k for k in [*opts.flags, *opts.values] if any(w.startswith(k) for w in IP_WRITES)), None)
    if batch is not None:
        return f"runs commands from a file or in another namespace ({batch})"
    command = opts.operands[1] if len(opts.operands) > 1 else "show"
    return [] if command in IP_READ else f"changes the network configuration (`{command}`)"


IP_READ = {"show", "list", "lst", "ls", "sh", "s", "l", "get", "help"}
IP_WRITES = ("-batch", "-force", "-netns")
"""ip's own long options (any prefix is taken) that run a batch file or act in another network namespace."""


# ---------------------------------------------------------------- the table
READ = Form()
"""A row for a program that reads and prints whatever its options and operands."""
DIFFISH = Form(outputs=("--output",), writes=("--ext-diff", "-O", "--open-files-in-pager"))
GIT_LISTING = ("--format", "--sort", "--contains", "--no-contains", "--merged", "--no-merged", "--points-at")
GIT = Form(
    values="Cc", long_values=("--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix"),
    writes=("-c", "--git-dir", "--work-tree", "--exec-path", "--config-env", "-p", "--paginate", "--super-prefix"),
    chdir=("-C",),
    verbs={
        **{v: DIFFISH for v in ("log", "show", "diff", "whatchanged", "shortlog", "grep", "diff-tree", "diff-index",
                                "diff-files", "range-diff", "blame", "annotate")},
        **{v: READ for v in ("status", "ls-files", "ls-tree", "cat-file", "rev-parse", "rev-list", "describe",
                             "name-rev", "merge-base", "for-each-ref", "show-ref", "count-objects", "check-ignore",
                             "check-attr", "var", "version", "cherry", "show-branch", "verify-commit", "verify-tag",
                             "ls-remote")},
        "branch": Form(long_values=GIT_LISTING, operands="change",
                       dry=("-l", "--list", "-a", "--all", "-r", "--remotes", "--show-current", *GIT_LISTING),
                       writes=("-d", "-D", "--delete", "-m", "-M", "--move", "-c", "-C", "--copy", "-f", "--force",
                               "-u", "--set-upstream-to", "--unset-upstream", "--edit-description", "-t", "--track",
                               "--create-reflog")),
        "tag": Form(long_values=GIT_LISTING, operands="change", dry=("-l", "--list", "-v", "--verify", *GIT_LISTING),
                    writes=("-d", "--delete", "-a", "--annotate", "-s", "--sign", "-u", "--local-user", "-f",
                            "--force", "-m", "--message", "-F", "--file", "-e", "--edit")),
        "remote": Form(verbs={"show": READ, "get-url": READ}, bare=READ),
        "stash": Form(verbs={"list": READ, "show": DIFFISH}),
        "reflog": Form(verbs={"expire": None, "delete": None}, other=READ, bare=READ),
        "worktree": Form(verbs={"list": READ}),
        "notes": Form(verbs={"list": READ, "show": READ}, bare=READ),
        "submodule": Form(verbs={"status": READ, "summary": READ}, bare=READ),
        "config": Form(code=_git_config, dry=("--get", "--get-all", "--get-regexp", "-l", "--list"),
                       writes=("--unset", "--unset-all", "--add", "--replace-all", "--rename-section",
                               "--remove-section", "-e", "--edit")),
        "clean": Form(needs_dry=True, dry=("-n", "--dry-run")),
        "apply": Form(needs_dry=True, dry=("--check", "--stat", "--numstat", "--summary"),
                      writes=("--apply", "--index", "--cached", "-3", "--3way", "--reject")),
        "archive": Form(values="o", long_values=("--format", "--prefix", "--add-file"), outputs=("-o", "--output"),
                        writes=("--remote", "--exec")),
    },
)
"""git: its reading subcommands (and ``branch``/``tag`` listing, ``clean -n``, ``apply --check``); a setting given
on the command line (``-c``, ``--git-dir``) may make it run any program, so it asks."""
TF_VALUES = ("-var", "-var-file", "-target", "-replace", "-state", "-lock-timeout", "-parallelism", "-out")
TERRAFORM = Form(
    single_dash=True, chdir=("-chdir",),
    verbs={
        "plan": Form(single_dash=True, long_values=TF_VALUES, outputs=("-out",), writes=("-state-out", "-backup")),
        **{v: Form(single_dash=True, long_values=TF_VALUES)
           for v in ("validate", "show", "output", "graph", "version")},
        "providers": Form(verbs={"schema": READ}, bare=READ),
        "state": Form(verbs={"list": READ, "show": READ, "pull": READ}),
        "workspace": Form(verbs={"list": READ, "show": READ}),
        "fmt": Form(single_dash=True, needs_dry=True, dry=("-check", "-write=false")),
    },
)
"""terraform (and OpenTofu): plan, validate, show, output, graph read; apply, destroy, import … are not listed."""
SYSTEMCTL_READ = ("status", "show", "cat", "is-active", "is-enabled", "is-failed", "is-system-running",
                  "list-units", "list-unit-files", "list-timers", "list-sockets", "list-dependencies", "list-jobs",
                  "list-machines", "list-automounts", "list-paths", "get-default", "show-environment", "help")
PIP = Form(verbs={**{v: READ for v in ("list", "show", "freeze", "check", "help", "search", "index", "inspect",
                                       "debug", "hash")},
                  "config": Form(verbs={"list": READ, "get": READ, "debug": READ}),
                  "cache": Form(verbs={"dir": READ, "info": READ, "list": READ})},
           long_values=("--python",), writes=("--python",))
NPM = Form(verbs={**{v: READ for v in ("ls", "list", "ll", "la", "view", "info", "show", "v", "outdated", "search",
                                       "explain", "why", "prefix", "root", "help", "query")},
                  "config": Form(verbs={"get": READ, "list": READ, "ls": READ})})
GZIP = Form(values="S", long_values=("--suffix",), writes=("-f", "--force"), filter=True, code=_compressor(False))
ZSTD = Form(values="oD", long_values=("--output",), outputs=("-o",), writes=("-f", "--force"), filter=True,
            code=_compressor(True))
FORMS: dict[str, Form] = {
    "git": GIT, "terraform": TERRAFORM, "tofu": TERRAFORM,
    "tar": Form(values=TAR_VALUES, long_values=TAR_LONG, old_style=True, code=_tar, known=("--list", "--checkpoint"),
                writes=("-r", "--append", "-u", "--update", "-A", "--catenate", "--concatenate", "--delete",
                        "--remove-files", "--to-command", "-I", "--use-compress-program", "--checkpoint-action",
                        "-F", "--info-script", "--new-volume-script", "-g", "--listed-incremental", "--index-file",
                        "--rsh-command", "--overwrite", "-U", "--unlink-first", "--recursive-unlink", "--volno-file")),
    "unzip": Form(values="dxP", needs_dry=True, dry=("-l", "-v", "-t", "-z", "-Z", "-p", "-c")),
    "zipinfo": READ,
    "rsync": Form(values=RSYNC_VALUES, long_values=RSYNC_LONG, code=_rsync, dry=("-n", "--dry-run", "--list-only"),
                  keeps=("--ignore-existing",),
                  writes=("--log-file", "--write-batch", "--only-write-batch", "-e", "--rsh")),
    "sed": Form(values="elf", long_values=("--expression", "--file", "--line-length"), code=_sed,
                writes=("-i", "--in-place", "-f", "--file")),
    **{n: Form(values="Fvfe", long_values=("--field-separator", "--assign", "--file", "--source", "--exec",
                                            "--include", "--load"),
               writes=("-f", "--file", "-E", "--exec", "-i", "--include", "-l", "--load", "-d", "--dump-variables",
                       "-p", "--profile", "-o", "--pretty-print", "-D", "--debug", "-W"), code=_awk)
       for n in ("awk", "gawk", "mawk", "nawk")},
    "sqlite3": Form(single_dash=True, code=_sqlite,
                    long_values=("-cmd", "-separator", "-newline", "-nullvalue", "-mmap", "-vfs", "-lookaside",
                                 "-pagecache", "-heap", "-maxsize", "-init", "-A"),
                    writes=("-init", "-A", "-append", "-deserialize")),
    "mkdir": Form(values="m", long_values=("--mode", "--context"), makes="dirs"),
    "touch": Form(values="dtr", long_values=("--date", "--reference", "--time"), makes="files"),
    "tee": Form(makes="files"),
    "cp": Form(values="tS", long_values=("--target-directory", "--suffix"), keeps=("-n", "--no-clobber",
                                                                                   "--update=none"),
               writes=CP_WRITES, code=_cp),
    "sort": Form(values="kotST", long_values=("--key", "--field-separator", "--buffer-size", "--temporary-directory",
                                              "--parallel", "--batch-size", "--files0-from", "--random-source",
                                              "--sort"),
                 outputs=("-o", "--output"), writes=("--compress-program",)),
    "shuf": Form(values="inoe", long_values=("--input-range", "--head-count", "--random-source"),
                 outputs=("-o", "--output")),
    "iconv": Form(values="ft", long_values=("--from-code", "--to-code"), outputs=("-o", "--output")),
    "sdiff": Form(values="w", long_values=("--width",), outputs=("-o", "--output"), writes=("--diff-program",)),
    "xxd": Form(values="cglosnR", long_values=(), makes="second"),
    "mktemp": Form(values="p", long_values=("--tmpdir", "--suffix"), code=_mktemp),
    **{n: GZIP for n in ("gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "lzma", "unlzma", "lz4")},
    **{n: ZSTD for n in ("zstd", "unzstd")},
    "curl": Form(values=CURL_VALUES, long_values=CURL_LONG + CURL_LOCAL,
                 outputs=("-o", "--output", "-c", "--cookie-jar", "-D", "--dump-header", "--trace", "--trace-ascii",
                          "--stderr", "--libcurl", "--etag-save"),
                 writes=("-O", "--remote-name", "--remote-name-all", "-J", "--remote-header-name", "-K", "--config",
                         "--hsts", "--alt-svc", "--output-dir", "-d", "--data", "--data-raw", "--data-binary",
                         "--data-urlencode", "--data-ascii", "-F", "--form", "--form-string", "--json", "-T",
                         "--upload-file", "-X", "--request", "--mail-rcpt", "--mail-from")),
    "wget": Form(values="OoaPeitTwUlQDRAIXB", long_values=("--output-document", "--directory-prefix", "--tries",
                                                              "--timeout", "--wait", "--user-agent", "--header"),
                 outputs=("-O", "--output-document", "-o", "--output-file", "-a", "--append-output"), code=_wget,
                 writes=("-N", "--timestamping", "-r", "--recursive", "-m", "--mirror", "-p", "--page-requisites",
                         "-c", "--continue", "-e", "--execute", "--config", "--use-askpass", "--post-data",
                         "--post-file", "--method", "--body-data", "--body-file", "--backups")),
    "yq": Form(writes=("-i", "--inplace", "-s", "--split-exp")),
    "patch": Form(needs_dry=True, dry=("--dry-run",), values="pio", outputs=("-o", "--output")),
    "systemctl": Form(verbs={v: READ for v in SYSTEMCTL_READ}, bare=READ, values="tpPnoH",
                      long_values=("--type", "--property", "--state", "--lines", "--output", "--host", "--machine"),
                      writes=("-H", "--host", "-M", "--machine")),
    "journalctl": Form(values="unpoDMtbSUgIFkc", writes=("--vacuum-size", "--vacuum-time", "--vacuum-files",
                                                          "--rotate", "--flush", "--relinquish-var",
                                                          "--smart-relinquish-var", "--sync", "--setup-keys",
                                                          "--update-catalog")),
    "dmesg": Form(values="flsnF", writes=("-c", "--read-clear", "-C", "--clear", "-n", "--console-level", "-D",
                                          "--console-off", "-E", "--console-on")),
    "crontab": Form(needs_dry=True, dry=("-l",), writes=("-r", "-e", "-i")),
    "iptables": Form(needs_dry=True, dry=("-L", "--list", "-S", "--list-rules"), values="tw",
                     writes=("-A", "--append", "-D", "--delete", "-I", "--insert", "-R", "--replace", "-F", "--flush",
                             "-Z", "--zero", "-N", "--new-chain", "-X", "--delete-chain", "-P", "--policy", "-E",
                             "--rename-chain")),
    "ip": Form(single_dash=True, code=_ip, long_values=("-f", "-family", "-b", "-batch", "-n", "-netns", "-rc",
                                                         "-rcvbuf", "-l", "-loops")),
    "ss": Form(writes=("-K", "--kill")),
    **{n: Form(values="bhjPxyzo", code=_pager, writes=("-o", "-O", "--log-file", "--LOG-FILE", "-k", "--lesskey-file",
                                                        "--lesskey-src"))
       for n in ("less", "more")},
    "hostname": Form(operands="change", writes=("-F", "--file", "-b", "--boot")),
    "apt": Form(verbs={v: READ for v in ("list", "search", "show", "policy", "depends", "rdepends", "showsrc",
                                         "help")}),
    "apt-cache": Form(verbs={"gencaches": None}, other=READ),
    "dpkg": Form(needs_dry=True, writes=("-i", "--install", "-r", "--remove", "-P", "--purge", "--configure",
                                         "--unpack", "-A", "--record-avail", "--set-selections", "--clear-selections",
                                         "--update-avail", "--merge-avail", "--clear-avail", "--add-architecture",
                                         "--remove-architecture", "--triggers-only"),
                 dry=("-l", "--list", "-L", "--listfiles", "-s", "--status", "-S", "--search", "-p",
                                      "--print-avail", "-c", "--contents", "-I", "--info", "--get-selections",
                                      "--print-architecture", "--print-foreign-architectures", "--compare-versions")),
    "dpkg-query": READ,
    "rpm": Form(needs_dry=True, dry=("-q", "--query", "-V", "--verify", "-K", "--checksig"),
                writes=("-i", "--install", "-U", "--upgrade", "-F", "--freshen", "-e", "--erase", "--setperms",
                        "--setugids", "--restore", "--import", "--initdb", "--rebuilddb")),
    "brew": Form(verbs={v: READ for v in ("list", "ls", "info", "search", "deps", "uses", "outdated", "config",
                                          "doctor", "leaves", "desc", "home", "--prefix", "--cellar", "--cache")}),
    "pip": PIP, "pip3": PIP, "npm": NPM,
    "helm": Form(values="n", long_values=("--namespace", "--kube-context", "--kubeconfig"),
                 verbs={v: READ for v in ("list", "ls", "status", "get", "show", "template", "lint", "version",
                                          "history", "search", "env")} | {"repo": Form(verbs={"list": READ})}),
    "ssh-keygen": Form(values="fEF", needs_dry=True, dry=("-l", "-F", "-y", "-B"),
                       writes=("-R", "-H", "-p", "-c", "-s", "-A", "-t", "-u", "-k", "-N", "-P")),
    **{n: READ for n in ("who", "w", "last", "lastlog", "lscpu", "lsblk", "lsusb", "lspci", "lsmod",
                         "vmstat", "iostat", "mpstat", "pstree", "lsattr", "namei", "whereis", "findmnt", "tty", "cal",
                         "ncal", "factor", "nm", "readelf", "objdump", "b2sum", "sha224sum", "sha384sum", "shasum",
                         "getconf", "shellcheck", "netstat", "lsof", "top", "bc", "tsort", "expand",
                         "unexpand", "fmt", "pr", "sum", "look", "dircolors", "diff3", "vdir", "dir")},
}
"""Program name → its row.  A program not here is judged by the read-only rule (``readonly``) or asks; ``find``
is a wrapper of ``rules`` (what -exec runs is judged like any command)."""
