"""Law-1 rules for what leaves the machine, and for git (whose push is the commonest such send).

Data sent elsewhere — an upload, a POST, a mail, a pushed commit, a command run on
another host — cannot be called back, so it is irreversible.  Downloading is
reversible, unless it writes over a file that exists.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable

from artoo.tasks.law1.core import (
    Ctx,
    Danger,
    danger,
    exists_state,
    is_dynamic,
    parse_options,
    show_placeholders,
    targets_text,
    write_dangers,
)
from artoo.tasks.law1.rules_files import is_remote

Rule = Callable[[list[str], Ctx], list[Danger]]

CURL_VALUES = "AbcCdDeEFHKmoPQrTtuUwxXyYz"
CURL_LONG = ("--data", "--data-raw", "--data-binary", "--data-urlencode", "--data-ascii", "--form",
             "--form-string", "--json", "--upload-file", "--request", "--output", "--header", "--user",
             "--user-agent", "--referer", "--cookie", "--cookie-jar", "--proxy", "--max-time", "--write-out",
             "--config", "--cert", "--range", "--continue-at", "--url", "--output-dir", "--mail-rcpt",
             "--mail-from", "--connect-timeout", "--retry", "--resolve", "--cacert", "--key")
SENDS = ("-d", "-F", "-T", "--data", "--data-raw", "--data-binary", "--data-urlencode", "--data-ascii",
         "--form", "--form-string", "--json", "--upload-file", "--mail-rcpt")


def url_host(url: str) -> str:
    """The host part of a URL (the word itself when it has none)."""
    rest = url.split("://", 1)[-1]
    return rest.split("/", 1)[0] or url


def _curl(words: list[str], ctx: Ctx) -> list[Danger]:
    opts = parse_options(words[1:], short_values=CURL_VALUES, long_values=CURL_LONG)
    urls = opts.operands + opts.values.get("--url", [])
    hosts = [url_host(u) for u in urls] or ["(no url)"]
    method = (opts.value("-X", "--request") or "").upper()
    as_get = opts.has("-G", "--get")
    sending = [s for s in SENDS if s in opts.values]
    dangers: list[Danger] = []
    if (sending and not as_get) or opts.has("-T", "--upload-file") or method in ("POST", "PUT", "DELETE",
                                                                                 "PATCH"):
        upload = opts.has("-T", "--upload-file")
        what = f"{method or ('upload' if upload else 'POST')} {sending[0] if sending else ''}".strip()
        dangers.append(danger("network", words, f"sends data off this machine ({what}) to {', '.join(hosts)}",
                              urls, ctx))
    if any(u.startswith(("smtp://", "smtps://")) for u in urls):
        dangers.append(danger("network", words, "sends email", urls, ctx))
    outputs = list(opts.values.get("-o", []) + opts.values.get("--output", []))
    if opts.has("-O", "--remote-name", "--remote-name-all"):
        folder = opts.value("--output-dir") or "."
        outputs += [posixpath.join(folder, posixpath.basename(u.split("?")[0]) or "index.html") for u in urls]
    return dangers + write_dangers(words, outputs, ctx)


def _wget(words: list[str], ctx: Ctx) -> list[Danger]:
    opts = parse_options(words[1:], short_values="OoaPeitTwUlQDRAIXB", long_values=(
        "--output-document", "--post-data", "--post-file", "--method", "--body-data", "--body-file"))
    method = (opts.value("--method") or "").upper()
    hosts = ", ".join(url_host(u) for u in opts.operands) or "(no url)"
    dangers: list[Danger] = []
    if opts.has("--post-data", "--post-file", "--body-data", "--body-file") or method in (
            "POST", "PUT", "DELETE", "PATCH"):
        dangers.append(danger("network", words, f"sends data off this machine to {hosts}", opts.operands, ctx))
    document = opts.value("-O", "--output-document")
    if document:
        dangers += write_dangers(words, [document], ctx)
    return dangers


def _scp(words: list[str], ctx: Ctx) -> list[Danger]:
    opts = parse_options(words[1:], short_values="PioFclSJD")
    if len(opts.operands) < 2:
        return []
    dest = opts.operands[-1]
    if is_dynamic(dest):
        return [danger("network", words, f"copies to {targets_text([dest], ctx)}, only known at run time "
                       "(it may be another host)", [dest], ctx)]
    if is_remote(dest):
        host = dest.split(":", 1)[0]
        return [danger("network", words, f"copies {targets_text(opts.operands[:-1], ctx)} off this machine "
                       f"to {host}", [dest], ctx)]
    state = exists_state(dest, ctx)
    if state is False:
        return []
    return [danger("overwrite", words, f"copies onto {'existing' if state else 'possibly existing'} "
                   f"{targets_text([dest], ctx)}", [dest], ctx)]


def _ssh(words: list[str], ctx: Ctx) -> list[Danger]:
    opts = parse_options(words[1:], short_values="pilo FJLRDbceEImOQSWwB".replace(" ", ""))
    if not opts.operands:
        return []
    host, command = opts.operands[0], opts.operands[1:]
    if command:
        shown = show_placeholders(" ".join(command))[:60]
        return [danger("network", words, f"runs `{shown}` on remote host {host}", [host], ctx)]
    return [danger("network", words, f"opens a session on remote host {host}", [host], ctx)]


def _always_net(detail: str) -> Rule:
    def rule(words: list[str], ctx: Ctx) -> list[Danger]:
        operands = [w for w in words[1:] if not w.startswith("-")][:2]
        return [danger("network", words, detail, operands, ctx)]

    return rule


def _twine(words: list[str], ctx: Ctx) -> list[Danger]:
    return _always_net("uploads to the package index")(words, ctx) if words[1:2] == ["upload"] else []


GIT_VALUED = ("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path")


def _git(words: list[str], ctx: Ctx) -> list[Danger]:
    args, i = words[1:], 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in GIT_VALUED else 1
    if i >= len(args):
        return []
    sub, rest = args[i], args[i + 1:]
    rule = GIT.get(sub)
    return rule(words, rest, ctx) if rule else []


def _git_danger(category: str, detail: str, test: Callable[[list[str]], bool] = lambda r: True) -> Callable:
    def rule(words: list[str], rest: list[str], ctx: Ctx) -> list[Danger]:
        if not test(rest):
            return []
        targets = [r for r in rest if not r.startswith("-")][:3]
        return [danger(category, words, detail, targets, ctx)]

    return rule


def _flag(rest: list[str], *names: str) -> bool:
    """A long flag by name, or a short letter anywhere in a cluster (``-fdx`` has f)."""
    shorts = {n[1] for n in names if len(n) == 2}
    return any(r in names or (r.startswith("-") and not r.startswith("--") and shorts & set(r[1:]))
               for r in rest)


def _git_push(words: list[str], rest: list[str], ctx: Ctx) -> list[Danger]:
    forced = _flag(rest, "-f", "--force", "--force-with-lease", "--mirror", "--delete", "-d") or any(
        r.startswith(("+", ":", "--force")) for r in rest)
    detail = "sends commits off this machine" + (" and rewrites or deletes remote history" if forced else "")
    return [danger("network", words, detail, [r for r in rest if not r.startswith("-")][:3], ctx)]


def _git_checkout(words: list[str], rest: list[str], ctx: Ctx) -> list[Danger]:
    operands = [r for r in rest if not r.startswith("-")]
    paths = rest[rest.index("--") + 1:] if "--" in rest else operands[1:]
    single_path = len(operands) == 1 and (operands[0] == "." or exists_state(operands[0], ctx) is True)
    if _flag(rest, "-f", "--force") or paths or single_path:
        shown = paths or operands
        return [danger("overwrite", words, f"discards uncommitted changes to {targets_text(shown, ctx)}",
                       shown, ctx)]
    return []


GIT = {
    "clean": _git_danger("deletion", "deletes untracked files", lambda r: not _flag(r, "-n", "--dry-run")),
    "reset": _git_danger("overwrite", "discards uncommitted changes",
                         lambda r: any(x in ("--hard", "--merge", "--keep") for x in r)),
    "push": _git_push,
    "send-email": _git_danger("network", "sends email"),
    "checkout": _git_checkout,
    "restore": _git_danger("overwrite", "discards uncommitted changes in the working tree",
                           lambda r: not ({"--staged", "-S"} & set(r)) or {"--worktree", "-W"} & set(r)),
    "rm": _git_danger("deletion", "deletes tracked files", lambda r: not {"--cached", "-n", "--dry-run"} & set(r)),
    "branch": _git_danger("deletion", "deletes branches",
                          lambda r: _flag(r, "-d", "-D", "--delete") and "--list" not in r),
    "stash": _git_danger("deletion", "drops stashed changes", lambda r: r[:1] in (["drop"], ["clear"])),
    "tag": _git_danger("deletion", "deletes tags", lambda r: _flag(r, "-d", "--delete")),
    "reflog": _git_danger("deletion", "expires history", lambda r: r[:1] in (["expire"], ["delete"])),
    "gc": _git_danger("deletion", "prunes unreachable objects", lambda r: any(
        x.startswith("--prune=now") or x == "--prune=all" for x in r)),
    "filter-branch": _git_danger("overwrite", "rewrites history"),
    "filter-repo": _git_danger("overwrite", "rewrites history"),
}

GH_SENDS = {"create", "merge", "comment", "close", "delete", "edit", "reopen", "review", "upload", "fork",
            "transfer", "archive", "rename", "lock", "pin", "ready", "sync", "set", "add", "remove"}


def _gh(words: list[str], ctx: Ctx) -> list[Danger]:
    verbs = [w for w in words[1:] if not w.startswith("-")]
    if verbs[:1] == ["api"]:
        sends = any(w in ("-f", "-F", "--field", "--raw-field", "--input") for w in words) or any(
            m in words for m in ("POST", "PUT", "DELETE", "PATCH"))
        return [danger("network", words, "sends data to GitHub", verbs[1:2], ctx)] if sends else []
    hit = next((v for v in verbs[:2] if v in GH_SENDS), None)
    return [danger("network", words, f"changes GitHub ({hit})", verbs[2:3], ctx)] if hit else []


RULES: dict[str, Rule] = {
    "curl": _curl, "wget": _wget, "scp": _scp, "git": _git, "gh": _gh,
    **{n: _ssh for n in ("ssh", "mosh", "autossh")},
    **{n: _always_net("transfers files to or from another host") for n in (
        "sftp", "ftp", "lftp", "ncftp", "ncftpput", "tftp", "ftp-upload", "ssh-copy-id")},
    **{n: _always_net("opens a raw network connection") for n in ("nc", "netcat", "ncat", "socat", "telnet")},
    **{n: _always_net("sends email") for n in (
        "mail", "mailx", "sendmail", "mutt", "neomutt", "msmtp", "ssmtp", "swaks", "s-nail")},
    "twine": _twine,
}
