"""The read-only rule: which commands run unasked where no overlay can show what a command changed.

Guessing which writes are safe took hundreds of rules and still missed scripts, so the rule is the
other way round: a command reads only when its program is known to only read and print (``PLAIN``),
without an option that makes it write or run something (``WRITES_WITH``), and a line reads only when
every command in it does and nothing is redirected into a file.  Known by its own code: not ``./ls``.
Programs whose subcommand, options or program text decide (``git``, ``tar``, ``sed``, ``awk``, ``sqlite3``)
are rows of ``forms``, which lists their reading and creating forms; every other form of them asks.
"""

from __future__ import annotations

import re

PLAIN = {
    "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "zgrep", "zcat", "bzcat", "xzcat", "cut", "tr", "nl",
    "tac", "rev", "fold", "column", "paste", "join", "comm", "cmp", "diff", "od", "hexdump", "strings", "md5sum",
    "sha1sum", "sha256sum", "sha512sum", "cksum", "base32", "stat", "du", "df", "pwd", "echo", "printf", "true",
    "false", "test", "[", ":", "basename", "dirname", "realpath", "readlink", "which", "type", "whoami", "id",
    "groups", "uname", "arch", "nproc", "free", "uptime", "ps", "pgrep", "printenv", "locale", "seq", "sleep", "expr",
    "jq", "numfmt", "cd", "pushd", "popd", "dirs", "export", "declare", "typeset", "local", "readonly", "unset",
    "set", "shopt", "shift", "read", "exit", "return", "break", "continue", "wait", "umask", "unalias", "times",
    "getopts"
}
"""Programs and builtins that read and print, or change only shell state that runs nothing (not alias nor hash)."""
WRITES_WITH: dict[str, tuple[str, tuple[str, ...]]] = {
    "sort": ("o", ("--output", "--compress-program")), "date": ("s", ("--set",)), "file": ("C", ("--compile",)),
    "rg": ("", ("--pre",)), "tree": ("o", ()), "base64": ("o", ("--output",)),
}
"""Readers that write or run a program with some options: (short option letters, long options)."""
LOADER = re.compile(r"(PATH|BASH_ENV|ENV|LD_[A-Z_]+)(\+?=.*)?", re.DOTALL)
"""A word that sets or names a variable deciding which program a later command runs or what it loads."""
CONFIGURES = re.compile(r"(GIT_[A-Z_]+|HOME|XDG_[A-Z_]+|PAGER|MANPAGER|LESSOPEN|LESSCLOSE|AWKPATH|AWKLIBPATH|"
                        r"WGETRC|CURL_HOME|TF_[A-Z_]+|PIP_[A-Z_]+|npm_config_\w+|NPM_CONFIG_\w+|TAR_OPTIONS|"
                        r"RSYNC_[A-Z_]+|GZIP|BZIP2?|XZ_OPT|XZ_DEFAULTS|ZSTD_[A-Z_]+|SQLITE_[A-Z_]+|SYSTEMD_[A-Z_]+)"
                        r"(\+?=.*)?", re.DOTALL)
"""A variable that configures a program ``forms`` lets run unasked (``GIT_EXTERNAL_DIFF=x git diff`` runs x,
``TAR_OPTIONS=--to-command=x`` too): setting it, or naming it to ``read``/``export``, is no read."""
NAMERS = {"read", "export", "declare", "typeset", "local", "readonly", "getopts", "mapfile", "readarray"}
"""Builtins whose bare operands are variable names they set or export."""
HARMLESS_SINKS = {"/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "-"}
TRUSTED_DIRS = ("/bin/", "/usr/bin/")


def harmless_sink(target: str) -> bool:
    """/dev/null, stdout and friends: a redirection there writes nothing anyone keeps."""
    return target in HARMLESS_SINKS or target.startswith(("/dev/fd/", "/proc/self/fd/"))


def reads_only(words: list[str]) -> bool:
    """Whether one command (words[0] is the program, no wrapper) is known to only read."""
    program = words[0]
    name = program.rsplit("/", 1)[-1]
    if "/" in program and not program.startswith(TRUSTED_DIRS):
        return False
    if name in PLAIN:
        return True
    if name == "uniq":  # ``uniq in.txt out.txt`` writes its second operand
        return len([w for w in words[1:] if not w.startswith("-") or w == "-"]) <= 1
    if name not in WRITES_WITH:
        return False
    letters, longs = WRITES_WITH[name]
    for word in words[1:]:
        if word == "--":
            break
        option = word.partition("=")[0]
        if option.startswith("--") and len(option) > 2 and any(o.startswith(option) for o in longs):
            return False  # GNU takes any unambiguous prefix: --out is --output
        if option.startswith("-") and not option.startswith("--") and set(option[1:]) & set(letters):
            return False
    return True

