"""Law-1 rules for the user's files: deleting, moving, overwriting, truncating, editing in place.

Each rule takes a command's words and returns the Dangers it finds (none = reversible).
Creating something new is reversible; replacing or destroying what exists is not, and
"cannot tell whether it exists" counts as "may exist".
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import replace

from artoo.tasks.law1.core import (
    FOUND,
    Ctx,
    Danger,
    danger,
    exists_state,
    holds_system_paths,
    is_dynamic,
    parse_options,
    resolve,
    system_dest,
    system_targets,
    targets_text,
    write_dangers,
)

EXEC = ("-exec", "-execdir", "-ok", "-okdir")


def _delete(words: list[str], ctx: Ctx) -> list[Danger]:
    opts = parse_options(words[1:], short_values="ns" if words[0].endswith("shred") else "")
    verb = "destroys the contents of" if "shred" in words[0] and not opts.has("-u") else "deletes"
    return [danger("deletion", words, f"{verb} {targets_text(opts.operands, ctx)}", opts.operands, ctx)]


def _find(words: list[str], ctx: Ctx) -> list[Danger]:
    args, i = words[1:], 0
    while i < len(args) and (args[i] in ("-H", "-L", "-P", "-D") or args[i].startswith("-O")):
        i += 2 if args[i] == "-D" else 1
    roots: list[str] = []
    while i < len(args) and not args[i].startswith("-") and args[i] not in ("(", "!", ","):
        roots.append(args[i])
        i += 1
    roots = roots or ["."]
    found = replace(ctx, found_roots=roots)
    dangers: list[Danger] = []
    while i < len(args):
        arg = args[i]
        if arg == "-delete":
            dangers.append(danger("deletion", words, f"deletes files found under {', '.join(roots)}",
                                  [FOUND], found))
        elif arg in EXEC:
            j = i + 1
            while j < len(args) and not (args[j] == ";" or (args[j] == "+" and args[j - 1] == FOUND)):
                j += 1
            dangers += ctx.recurse_argv(args[i + 1:j], ctx.child(f"find {arg}", found_roots=roots))
            i = j
        elif arg in ("-fprint", "-fprint0", "-fprintf", "-fls") and i + 1 < len(args):
            dangers += write_dangers(words, [args[i + 1]], ctx)
            i += 1
        i += 1
    return dangers


def _dest_states(sources: list[str], dest: str, dir_hint: bool, ctx: Ctx) -> tuple[bool, bool]:
    """(some landing spot exists, some landing spot is unknown) for a copy/move/link."""
    if not dir_hint:
        state = exists_state(dest, ctx)
        return state is True, state is None
    known, unknown = False, False
    for src in sources or [FOUND]:
        if is_dynamic(src) or is_dynamic(dest):
            unknown = True
            continue
        state = exists_state(posixpath.join(dest, posixpath.basename(src.rstrip("/")) or src), ctx)
        known, unknown = known or state is True, unknown or state is None
    return known, unknown


def _transfer(words: list[str], ctx: Ctx, force_only: bool = False) -> list[Danger]:
    """cp / mv / ln / install: system destinations, and landing on something that exists."""
    verb = words[0].rsplit("/", 1)[-1]
    opts = parse_options(words[1:], short_values="tSmog" if verb == "install" else "tS",
                         long_values=("--target-directory", "--suffix", "--mode", "--owner", "--group"))
    target_dir = opts.value("-t", "--target-directory")
    operands = opts.operands
    if target_dir is not None:
        sources, dest = operands, target_dir
    elif len(operands) >= 2:
        sources, dest = operands[:-1], operands[-1]
    elif verb == "ln" and operands:
        sources, dest = operands, "./"
    else:
        return []
    dir_hint = target_dir is not None or dest.endswith("/") or len(sources) > 1
    dangers: list[Danger] = []
    moved_system = system_targets(sources, ctx) if verb == "mv" else []
    if moved_system or system_dest(dest, dir_hint, ctx):
        what = moved_system or [dest]
        dangers.append(danger("system", words, f"changes system path {targets_text(what, ctx)}", what, ctx))
    safe = (opts.has("-n", "--no-clobber", "-b", "--backup") or opts.value("--update") in ("none", "none-fail")
            or (force_only and not opts.has("-f", "--force")))
    if safe:
        return dangers
    there, unknown = _dest_states(sources, dest, dir_hint, ctx)
    if there or unknown:
        dangers.append(danger("overwrite", words, _landing_reason(verb, dest, there, dir_hint, ctx), [dest], ctx))
    return dangers


VERBS = {"mv": "moves", "cp": "copies", "ln": "links", "install": "installs"}


def _landing_reason(command: str, dest: str, there: bool, dir_hint: bool, ctx: Ctx) -> str:
    shown, verb = targets_text([dest], ctx), VERBS.get(command, command)
    if not there:
        return f"{verb} onto {shown}, which may already exist (cannot tell), so it could be replaced"
    if dir_hint:
        return f"{verb} into {shown}, where an entry of the same name exists and would be replaced"
    if command == "mv":
        return (f"moves onto existing path {shown}: what is there is replaced (or the source merged "
                "into it), and moving onto existing data cannot be undone")
    return (f"{verb} onto existing path {shown}: a file there is overwritten (end the path with / "
            "to place it inside a directory)")


def _mv(words: list[str], ctx: Ctx) -> list[Danger]:
    return _transfer(words, ctx)


def _ln(words: list[str], ctx: Ctx) -> list[Danger]:
    return _transfer(words, ctx, force_only=True)


def _install(words: list[str], ctx: Ctx) -> list[Danger]:
    opts = parse_options(words[1:], short_values="mogtS")
    if opts.has("-d", "--directory"):
        return _create(["mkdir", *opts.operands], ctx)
    return _transfer(words, ctx)


def _tee(words: list[str], ctx: Ctx) -> list[Danger]:
    opts = parse_options(words[1:])
    return write_dangers(words, opts.operands, ctx, append=opts.has("-a", "--append"))


def _truncate(words: list[str], ctx: Ctx) -> list[Danger]:
    opts = parse_options(words[1:], short_values="sro", long_values=("--size", "--reference"))
    return write_dangers(words, opts.operands, ctx, verb="truncates")


def _dd(words: list[str], ctx: Ctx) -> list[Danger]:
    out = [a[3:] for a in words[1:] if a.startswith("of=")]
    devices = [o for o in out if o.startswith("/dev/") and o not in ("/dev/null", "/dev/stdout")]
    if devices:
        return [danger("deletion", words, f"writes raw data over device {targets_text(devices, ctx)}",
                       devices, ctx)]
    return write_dangers(words, out, ctx)


def _sed(words: list[str], ctx: Ctx) -> list[Danger]:
    args = words[1:]
    in_place = any(a.startswith("--in-place") or (a.startswith("-") and not a.startswith("--")
                                                  and "i" in a[1:]) for a in args)
    if not in_place:
        return []
    opts = parse_options(args, short_values="efl", long_values=("--expression", "--file", "--line-length"))
    files = opts.operands if opts.has("-e", "--expression", "-f", "--file") else opts.operands[1:]
    return [danger("overwrite", words, f"edits in place {targets_text(files, ctx)}", files, ctx)]


def _rsync(words: list[str], ctx: Ctx) -> list[Danger]:
    opts = parse_options(words[1:], short_values="efTBM", long_values=("--rsh", "--filter", "--exclude",
                                                                        "--include", "--temp-dir"))
    if opts.has("-n", "--dry-run") or len(opts.operands) < 2:
        return []
    dest = opts.operands[-1]
    dangers: list[Danger] = []
    deleting = [f for f in opts.flags if f.startswith("--delete") or f == "--remove-source-files"]
    if deleting:
        dangers.append(danger("deletion", words, f"{deleting[0]} deletes files ({targets_text([dest], ctx)})",
                              [dest], ctx))
    if is_remote(dest):
        host = dest.split(":", 1)[0].removeprefix("rsync")
        dangers.append(danger("network", words, f"sends files off this machine to {host}", [dest], ctx))
        return dangers
    return dangers + _sync_dest(words, dest, ctx)


def _sync_dest(words: list[str], dest: str, ctx: Ctx) -> list[Danger]:
    if system_dest(dest, True, ctx):
        return [danger("system", words, f"writes into system path {targets_text([dest], ctx)}", [dest], ctx)]
    state = exists_state(dest, ctx)
    if state is False:
        return []
    why = "existing" if state else "possibly existing"
    return [danger("overwrite", words, f"updates (overwrites) files in {why} {targets_text([dest], ctx)}",
                   [dest], ctx)]


def is_remote(word: str) -> bool:
    """``host:path``, ``user@host:path`` or ``rsync://…`` — not a local path."""
    if word.startswith(("/", "./", "../", "~")):
        return False
    return word.startswith("rsync://") or re.match(r"^([\w.+-]+@)?[\w.-]+::?", word) is not None


def _tar(words: list[str], ctx: Ctx) -> list[Danger]:
    args = words[1:]
    if args and not args[0].startswith("-"):
        args = ["-" + args[0], *args[1:]]
    opts = parse_options(args, short_values="fCbTXKNgVL", long_values=("--file", "--directory"))
    dangers: list[Danger] = []
    if opts.has("--remove-files", "--delete"):
        dangers.append(danger("deletion", words, "deletes files (--remove-files/--delete)", [], ctx))
    archive = opts.value("-f", "--file")
    if opts.has("-c", "--create") and archive:
        dangers += write_dangers(words, [archive], ctx)
    keep = opts.has("-k", "--keep-old-files", "--skip-old-files", "--keep-newer-files")
    if opts.has("-x", "--extract", "--get") and not keep:
        where = opts.value("-C", "--directory") or "."
        path = resolve(where, ctx)
        if path is not None and holds_system_paths(path):
            dangers.append(danger("system", words, f"extracts into system path {where}", [where], ctx))
        elif exists_state(where, ctx) is not False:
            dangers.append(danger("overwrite", words, f"extracts over existing files in {where} "
                                  "(tar replaces files of the same name; -k keeps them)", [where], ctx))
    return dangers


def _compress(words: list[str], ctx: Ctx) -> list[Danger]:
    name = words[0].rsplit("/", 1)[-1]
    opts = parse_options(words[1:], short_values="S", long_values=("--suffix",))
    keeps_by_default = name in ("zstd", "unzstd", "lz4")
    if (opts.has("-c", "--stdout", "--to-stdout", "-k", "--keep", "-l", "--list", "-t", "--test")
            or not opts.operands or (keeps_by_default and not opts.has("--rm"))):
        return []
    files = opts.operands
    how = "decompressed" if opts.has("-d", "--decompress") or name.startswith(("gun", "un", "bun")) \
        else "compressed"
    return [danger("deletion", words, f"replaces {targets_text(files, ctx)} with a {how} copy and deletes "
                   "the original", files, ctx)]


def _unzip(words: list[str], ctx: Ctx) -> list[Danger]:
    opts = parse_options(words[1:], short_values="dxP")
    if not opts.has("-o"):
        return []
    where = opts.value("-d") or "."
    return [danger("overwrite", words, f"extracts over existing files in {where} without asking (-o)",
                   [where], ctx)]


def _split(words: list[str], ctx: Ctx) -> list[Danger]:
    opts = parse_options(words[1:], short_values="abClnt", long_values=("--suffix-length",
                                                                          "--additional-suffix"))
    prefix = opts.operands[1] if len(opts.operands) > 1 else "x"
    hits = system_targets([prefix], ctx)
    return [danger("system", words, f"writes files {prefix}* into a system path", hits, ctx)] if hits else []


def _sort(words: list[str], ctx: Ctx) -> list[Danger]:
    opts = parse_options(words[1:], short_values="ktoST", long_values=("--output", "--key",
                                                                        "--field-separator"))
    out = opts.value("-o", "--output")
    return write_dangers(words, [out], ctx) if out else []


def _create(words: list[str], ctx: Ctx) -> list[Danger]:
    opts = parse_options(words[1:], short_values="mdtrZ", long_values=("--mode", "--date", "--reference"))
    hits = system_targets(opts.operands, ctx)
    if not hits:
        return []
    return [danger("system", words, f"creates entries in system path {targets_text(hits, ctx)}", hits, ctx)]


MODES = {"chmod": re.compile(r"^[-+=][rwxXstugoa,+=-]*$"), "chattr": re.compile(r"^[-+=][aAcCdDeFijmPsStTux]+$")}
VALUED = {"setfacl": {"-m", "-M", "-x", "-X"}, "chattr": {"-v", "-p"}}


def _permissions(words: list[str], ctx: Ctx) -> list[Danger]:
    """chmod/chown/chgrp/chattr/setfacl: recursive changes, or any change on a system path."""
    name = words[0].rsplit("/", 1)[-1]
    mode_re, valued = MODES.get(name), VALUED.get(name, set())
    args, positional, recursive, i = words[1:], [], False, 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            positional += args[i + 1:]
            break
        if not arg.startswith("-") or arg == "-" or (mode_re and mode_re.match(arg)):
            positional.append(arg)
        elif arg == "--recursive" or (not arg.startswith("--") and "R" in arg):
            recursive = True
        elif arg in valued:
            i += 1
        i += 1
    has_subject = name not in VALUED or name == "chattr"
    has_subject = has_subject and not any(a.startswith("--reference") for a in args)
    targets = positional[1:] if has_subject else positional
    what = "ownership" if name in ("chown", "chgrp") else "permissions"
    dangers = []
    if recursive:
        dangers.append(danger("system", words, f"recursively changes {what} of {targets_text(targets, ctx)}",
                              targets, ctx))
    hits = system_targets(targets, ctx)
    if hits:
        dangers.append(danger("system", words, f"changes {what} of system path {targets_text(hits, ctx)}",
                              hits, ctx))
    return dangers


def _in_place(verb: str, dry_flags: tuple[str, ...]) -> Callable[[list[str], Ctx], list[Danger]]:
    def rule(words: list[str], ctx: Ctx) -> list[Danger]:
        opts = parse_options(words[1:], short_values="pdiorF")
        if opts.has(*dry_flags):
            return []
        return [danger("overwrite", words, f"{verb} {targets_text(opts.operands, ctx)}", opts.operands, ctx)]

    return rule


RULES = {
    **{n: _delete for n in ("rm", "rmdir", "unlink", "shred", "srm", "wipe")},
    "find": _find, "mv": _mv, "cp": _transfer, "ln": _ln, "install": _install, "tee": _tee,
    "truncate": _truncate, "dd": _dd, "sed": _sed, "gsed": _sed, "rsync": _rsync, "tar": _tar,
    "gtar": _tar, "bsdtar": _tar, "unzip": _unzip, "split": _split, "sort": _sort,
    **{n: _compress for n in ("gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "lzma", "unlzma",
                              "compress", "uncompress", "pigz", "unpigz", "zstd", "unzstd", "lz4")},
    **{n: _create for n in ("mkdir", "touch", "mkfifo", "mknod")},
    **{n: _permissions for n in ("chmod", "chown", "chgrp", "chattr", "setfacl", "chcon")},
    "patch": _in_place("patches files in place", ("--dry-run",)),
    "dos2unix": _in_place("rewrites in place", ("-n", "--newfile")),
    "unix2dos": _in_place("rewrites in place", ("-n", "--newfile")),
    "rename": _in_place("renames in batch (an existing name can be replaced)", ("-n", "--no-act")),
    "prename": _in_place("renames in batch (an existing name can be replaced)", ("-n", "--no-act")),
    "mmv": _in_place("renames in batch (an existing name can be replaced)", ("-n",)),
}
