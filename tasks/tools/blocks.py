"""What the sandbox stopped, said in the tool result: the blocks a command cannot tell from success.

WHY: a shell command runs in its own process and network namespaces under a read-only root
(sandbox.py).  Some of what that stops fails in words that do not say who stopped it, and some
looks like success: ``pkill -f server`` exits 0 having signalled nothing of the user's (its
pattern matched the sandbox's own bubblewrap, which ignores the signal), ``ps aux`` lists the
command's three processes, ``echo hi > /dev/udp/127.0.0.1/9999`` lands on the sandbox's private
loopback, ``getent hosts example.com`` exits 2 without a word.  A model reading that claims
success, and the validators believe it.  ``judge`` reads the command with the shell grammar
(only what would run counts: ``echo "pkill x"`` signals nothing) together with its result, and
says which notes to append and whether the call failed because of the sandbox, whatever its exit
code.  A line that starts processes of its own in the background (``server & … kill %1``) may be
signalling or talking to those, so it is only told, never failed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from artoo.tasks.shell.parse import ParseError, Script, Simple, parse, strip_prefix

PREFIX = "[artoo sandbox]"
PROCESSES = (f"{PREFIX} this command ran in its own process namespace: it sees only the processes it started "
             "itself (those of earlier commands ended with them), so no other process (yours, the system's, a "
             "service) was listed, found or signalled")
NETWORK = (f"{PREFIX} no network: this command ran with only a private loopback, so other hosts, DNS and the "
           "services of this machine (on its 127.0.0.1 too) were out of its reach and nothing was sent to them; "
           "a server an earlier command started ended with it")
READ_ONLY = (f"{PREFIX} everything outside the workspace (and a private /tmp) is mounted read-only for commands: "
             "that write was refused by the sandbox, not by the file's permissions, and changed nothing")

SIGNALLERS = frozenset({"kill", "pkill", "killall", "skill", "snice", "systemctl", "service"})
"""Act on processes or services outside the command: from inside the sandbox they reach nothing of the user's."""
PROCESS_VIEWS = frozenset({"ps", "pgrep", "pidof", "pidwait", "pstree", "top", "htop", "atop", "btop", "pidstat",
                           "lsof", "fuser", "procs"})
"""Show processes: inside the sandbox only the command's own."""
SENDERS = frozenset({"curl", "wget", "nc", "ncat", "netcat", "socat", "ssh", "scp", "sftp", "telnet", "ftp",
                     "ping", "ping6", "traceroute", "tracepath", "mtr", "dig", "nslookup", "host", "whois",
                     "http", "https", "xh", "aria2c", "nmap", "mosquitto_pub", "iperf3"})
"""Reach another host or a service by network (their sole purpose): without the network they reach nothing."""
NETWORK_VIEWS = frozenset({"ss", "netstat", "ip", "ifconfig", "route", "arp", "nmcli"})
"""Show interfaces, routes and sockets: without the network only the private loopback's."""
LOOKUPS = frozenset({"hosts", "ahosts", "ahostsv4", "ahostsv6"})
"""``getent`` databases answered by DNS."""
OWN_PIDS = re.compile(r"^(%.*|\$!|\$\$|\$\{!\}|\$BASHPID|0)$")
"""``kill`` operands naming the command's own processes: its jobs, its last background child, its shell."""

WRAPPERS = {"sudo": "ugpCDrtThU", "doas": "uC", "nohup": "", "nice": "n", "ionice": "cnp", "timeout": "sk",
            "setsid": "", "time": "", "stdbuf": "ioe", "command": "", "exec": "a", "env": "uSC", "xargs": "nPdLsEaI",
            "watch": "nd", "chronic": "", "unbuffer": "", "flock": "wEc"}
"""Programs that run the command after their options, with the short options that take a value."""
XARGS_ITEMS = "__ARTOO_XARGS__"
"""The operands xargs appends from its stdin, unknown but there."""
LEADING = {"timeout": 1, "flock": 1}
"""Operands a wrapper takes before the command: timeout's duration, flock's lock file."""
SHELL = re.compile(r"(ba|da|z|k|mk)?sh")
MAX_DEPTH = 4

NET_ERROR = re.compile(r"[:\])] (?:Network is unreachable|Temporary failure in name resolution|Name or service not "
                       r"known|No address associated with hostname|Could not resolve host|unable to resolve host "
                       r"address|Couldn't connect to server|Connection refused)")
"""How a program reports a host or a service it could not reach (after its own ``prog: `` or ``[Errno N]``)."""
REFUSED = re.compile(r"Couldn't connect to server|Connection refused")
"""Nobody listening: for a line that started its own server that may be its own timing, not the sandbox."""
READ_ONLY_ERROR = re.compile(r"(?m)(?:: |\[Errno 30\] )Read-only file system(?::.*)?$")
"""EROFS as coreutils, bash and Python report it."""


@dataclass(frozen=True)
class Blocks:
    """What to tell the model about a command's run in the sandbox."""

    notes: tuple[str, ...] = ()
    """Lines to append to the output, each starting with ``[artoo sandbox]``."""
    failed: bool = False
    """The command could not have had its effect (a signal, a send): the call failed whatever its exit code."""

    @property
    def told(self) -> str:
        """The notes as they follow the ``[exit code N]`` line, each on a line of its own."""
        return "".join(f"\n{note}" for note in self.notes)


@dataclass
class _Acts:
    """What a command line does that the sandbox stops."""

    kinds: set[str]
    """signal, processes, send, network."""
    own: bool = False
    """It starts processes of its own in the background (a server it then signals or talks to)."""


def judge(command: str, output: str, returncode: int | None, network: bool) -> Blocks:
    """The notes for one sandboxed command (``returncode`` None: it timed out), and whether it failed by them."""
    acts = acts_of(command)
    failing = returncode != 0
    notes: list[str] = []
    failed = False
    if acts.kinds & {"signal", "processes"} and (failing or not acts.own):
        notes.append(PROCESSES)
        failed = "signal" in acts.kinds and not acts.own
    if not network and _offline(acts, output, failing):
        notes.append(NETWORK)
        failed = failed or ("send" in acts.kinds and not acts.own)
    if READ_ONLY_ERROR.search(output):
        notes.append(READ_ONLY)
    return Blocks(tuple(notes), failed)


def _offline(acts: _Acts, output: str, failing: bool) -> bool:
    """Whether the missing network is what this command met (by what it runs, or by its error lines)."""
    if acts.kinds & {"send", "network"} and (failing or not acts.own):
        return True
    if not failing:  # a log it printed may say "Connection refused": only a failure's own words count
        return False
    return any(not (acts.own and REFUSED.search(m.group(0))) for m in NET_ERROR.finditer(output))


def acts_of(command: str, depth: int = 0) -> _Acts:
    """What ``command`` does that the sandbox stops, read by the bash grammar (``sh -c`` texts and
    ``$( … )`` included); text the grammar cannot read is taken as whatever it could read."""
    acts = _Acts(set())
    if depth > MAX_DEPTH:
        return acts
    try:
        script: Script = parse(command, partial=True)
    except ParseError:  # partial reading never raises; kept so a grammar change cannot break a tool call
        return acts
    for simple in script.commands:
        _add(acts, simple, depth)
    for inner in script.substitutions:
        _merge(acts, acts_of(inner, depth + 1))
    return acts


def _add(acts: _Acts, simple: Simple, depth: int) -> None:
    words = unwrap(strip_prefix(simple.words))
    acts.own = acts.own or simple.background or (bool(words) and words[0] == "coproc")
    if any(t.startswith(("/dev/tcp/", "/dev/udp/")) for t in [*(r.target for r in simple.redirects), *simple.reads]):
        acts.kinds.add("send")
    if not words:
        return
    name, args = words[0].rsplit("/", 1)[-1], words[1:]
    flag = next((i for i, a in enumerate(args[:-1]) if re.fullmatch(r"-[a-z]*c[a-z]*", a)), None)
    if SHELL.fullmatch(name) and flag is not None:  # ``bash -lc 'pkill x'``
        _merge(acts, acts_of(args[flag + 1], depth + 1))
    elif name == "eval":
        _merge(acts, acts_of(" ".join(args), depth + 1))
    kind = kind_of(name, args)
    if kind is not None:
        acts.kinds.add(kind)


def _merge(acts: _Acts, inner: _Acts) -> None:
    acts.kinds |= inner.kinds
    acts.own = acts.own or inner.own


def kind_of(name: str, args: list[str]) -> str | None:
    """signal, processes, send or network for one program and its arguments, else None."""
    if args in (["--help"], ["-h"], ["--version"], ["-V"]):
        return None
    operands = [a for a in args if not a.startswith("-")]
    if name in ("kill", "pkill", "killall", "skill", "snice"):
        listing = any(a in ("-l", "-L", "--list") for a in args)  # kill -l: the signal names
        return "signal" if not listing and any(not OWN_PIDS.match(a) for a in operands) else None
    if name in SIGNALLERS:
        return "signal"
    if name in PROCESS_VIEWS:
        return "processes"
    if name in NETWORK_VIEWS:
        return "network"
    if name == "getent":
        return "send" if operands[:1] and operands[0] in LOOKUPS else None
    if name in ("nc", "ncat", "netcat") and any(a == "--listen" or re.fullmatch(r"-\w*l\w*", a) for a in args):
        return None  # a listener: a server of the command's own
    return "send" if name in SENDERS and operands else None


def unwrap(words: list[str]) -> list[str]:
    """The command a wrapper runs (``sudo -u x timeout 5 pkill y`` → ``pkill y``); [] for ``command -v``."""
    while words and words[0].rsplit("/", 1)[-1] in WRAPPERS:
        name, args, i = words[0].rsplit("/", 1)[-1], words[1:], 0
        if name == "command" and args[:1] in (["-v"], ["-V"]):
            return []
        while i < len(args) and (args[i].startswith("-") or (name == "env" and "=" in args[i])):
            if args[i] == "--":
                i += 1
                break
            i += 2 if len(args[i]) == 2 and args[i][1] in WRAPPERS[name] else 1
        words = args[i + LEADING.get(name, 0):]
        if name == "xargs" and words:
            words = [*words, XARGS_ITEMS]  # ``pgrep x | xargs kill``: kill's operands come from stdin
    return words
