"""Blame on realistic failures: a walk's unreadable corners, and a script that is not there.

Pure rules, table-driven (artoo.tasks.blame.traversal, artoo.tasks.blame.error_lines, artoo.tasks.blame.failure);
the flow stories are in tests/test_replan_redteam_blame.py.  The outputs are what the real
programs print (GNU find/grep/du/ls, dash, node 20, CPython 3.11, ruby), captured in a sandbox.
"""

from __future__ import annotations

import os

import pytest

from artoo.config.contracts import ReplanRequest
from artoo.config.settings import GGSParams
from artoo.tasks.blame.access import attributed_blocks
from artoo.tasks.blame.failure import walk_notes_of
from artoo.tasks.blame.traversal import split_noise, walks
from artoo.tasks.ggs.controller import GGSController
from artoo.tasks.roles.planner import directive_block
from tests.test_failure_model import WS, call, outcome, shell_fail

HOME = os.path.expanduser("~")
NODE_MISSING = ("node:internal/modules/cjs/loader:1210\n  throw err;\n  ^\n\nError: Cannot find module "
                "'/ws/tools/summarise.js'\n    at Module._resolveFilename (node:internal/modules/cjs/loader:1207:15)\n"
                "    at Module._load (node:internal/modules/cjs/loader:1038:27) {\n  code: 'MODULE_NOT_FOUND',\n"
                "  requireStack: []\n}\n\nNode.js v20.20.2")
NODE_PACKAGE = ("node:internal/modules/cjs/loader:1210\n  throw err;\n  ^\n\nError: Cannot find module 'csv-parse'\n"
                "Require stack:\n- /ws/tools/summarise.js\n    at Module._resolveFilename (node:internal/modules/cjs/"
                "loader:1207:15) {\n  code: 'MODULE_NOT_FOUND',\n  requireStack: [ '/ws/tools/summarise.js' ]\n}")
PANDAS = ('Traceback (most recent call last):\n  File "/ws/tools/summarise.py", line 3, in <module>\n'
          "    import pandas as pd\nModuleNotFoundError: No module named 'pandas'")
FIND_ROOT = ("/etc/ld.so.conf\n/etc/host.conf\nfind: '/proc/1/task/1/fd': Permission denied\n"
             "find: '/proc/1/map_files': Permission denied\nfind: ‘/root’: Permission denied\n"
             "find: '/proc/4242/task/4242/fd/5': No such file or directory\n/usr/share/doc/a.conf")


@pytest.mark.parametrize(("command", "found"), [
    ("find / -name '*.conf'", [("find", ["/"])]),
    ("find -L /srv /opt -type f -newer x.txt", [("find", ["/srv", "/opt"])]),
    ("find -name '*.log'", [("find", ["."])]),
    ("grep -r TODO ~", [("grep", ["~"])]),
    ("grep -rn -e TODO -e FIXME src lib", [("grep", ["src", "lib"])]),
    ("grep -Ril --include=*.py secret", [("grep", ["."])]),
    ("grep TODO notes.txt", []),  # no walk: a file that cannot be read failed
    ("du -sh /var/* | sort -h", [("du", ["/var"])]),
    ("ls -la /etc", []),
    ("ls -lR /etc > tree.txt", [("ls", ["/etc"])]),
    ("sudo find /root -name x 2>&1 | head", [("find", ["/root"])]),
    ("rg -l password /home", [("rg", ["/home"])]),
    ("tar czf b.tgz notes.txt", []),  # an archive that misses a file is incomplete: no walk noise
])
def test_walks_and_their_roots(command, found):
    assert [(w.program, w.roots) for w in walks(command)] == found


@pytest.mark.parametrize(("command", "output", "kept", "skipped"), [
    ("find / -name '*.conf'", FIND_ROOT, "/etc/ld.so.conf\n/etc/host.conf\n/usr/share/doc/a.conf",
     ["/proc/1/task/1/fd", "/proc/1/map_files", "/root", "/proc/4242/task/4242/fd/5"]),
    # the root itself could not be read: that line stays (the target failed)
    ("find /root -name x", "find: '/root': Permission denied", "find: '/root': Permission denied", []),
    # another program's error in the same line of shell stays
    ("find logs -name '*.log' > list.txt && wc -l /srv/x.log",
     "find: 'logs/old': Permission denied\nwc: /srv/x.log: No such file or directory",
     "wc: /srv/x.log: No such file or directory", ["logs/old"]),
    # a root missing altogether is no noise either
    ("grep -r TODO src", "grep: src: No such file or directory", "grep: src: No such file or directory", []),
    # a path the command removed itself before descending is no noise (find -exec rm: blamed as before)
    ("find /system -type d -empty -exec rm -r {} \\;", "find: '/system/a/b': No such file or directory",
     "find: '/system/a/b': No such file or directory", []),
])
def test_split_noise(command, output, kept, skipped):
    text, found = split_noise(command, output, WS)
    assert (text, [p for w in found for p in w.skipped]) == (kept, skipped)


def blame(command: str, output: str) -> list[str]:
    return [b.target for b, _ in attributed_blocks([outcome(calls=[shell_fail(command, output)])])]


@pytest.mark.parametrize(("command", "output", "blamed"), [
    # 1. traversal noise: what the walk could not read inside its roots is no failed target
    ("find / -name '*.conf'", FIND_ROOT, []),
    ("find . -name '*.conf' > confs.txt", "find: ‘./vault’: Permission denied", []),  # not the deliverable
    ("grep -rn TODO ~", f"{HOME}/notes.md:3:TODO call\ngrep: {HOME}/.cache/dconf: Permission denied", []),
    ("du -sh /var/*", "4.0K\t/var/backups\ndu: cannot read directory '/var/cache/ldconfig': Permission denied", []),
    ("ls -R /etc", "/etc:\nhosts\nls: cannot open directory '/etc/ssl/private': Permission denied", []),
    # the walk's noise no longer hides the real failure beside it
    ("find /srv -name '*.log' -exec wc -l {} + > counts.txt",
     "find: '/srv/private': Permission denied\nwc: /srv/app.log: Permission denied", ["/srv/app.log"]),
    # 2. a script that is not there is blamed, never the output it was to write
    ("node tools/summarise.js --out reports/summary.md", NODE_MISSING, ["/ws/tools/summarise.js"]),
    ("sh scripts/report.sh > reports/summary.md", "sh: 0: cannot open scripts/report.sh: No such file",
     ["/ws/scripts/report.sh"]),
    ("sh missing.sh > out.txt", "sh: 0: Can't open missing.sh", ["/ws/missing.sh"]),  # older dash
    # a missing package: neither the script nor the deliverable did anything wrong
    ("python3 tools/summarise.py --out reports/summary.md", PANDAS, []),
    ("python3 -m tools.summarise --out reports/summary.md", "/usr/bin/python3: Error while finding module "
     "specification for 'tools.summarise' (ModuleNotFoundError: No module named 'tools')", []),
    ("node tools/summarise.js --out reports/summary.md", NODE_PACKAGE, []),
])
def test_blame_on_realistic_failures(command, output, blamed):
    assert blame(command, output) == blamed


@pytest.mark.parametrize(("command", "output", "blamed"), [
    # the boundaries of both rules (these held before too, and must keep holding)
    ("find /root -name x", "find: ‘/root’: Permission denied", ["/root"]),  # the operand itself is unreadable
    ("find /root /etc -name x.conf", "find: '/root': Permission denied\nfind: '/etc/ssl/private': Permission "
     "denied", ["/root"]),
    ("grep TODO /root/notes.txt", "grep: /root/notes.txt: Permission denied", ["/root/notes.txt"]),  # no walk
    ("python3 tools/summarise.py --out reports/summary.md",
     "/usr/bin/python3: can't open file '/ws/tools/summarise.py': [Errno 2] No such file or directory",
     ["/ws/tools/summarise.py"]),
    ("bash scripts/x.sh --out a.txt", "bash: scripts/x.sh: No such file or directory", ["/ws/scripts/x.sh"]),
    ("ruby tools/sum.rb --out reports/summary.md", "ruby: No such file or directory -- tools/sum.rb (LoadError)",
     ["/ws/tools/sum.rb"]),
])
def test_what_is_still_blamed(command, output, blamed):
    assert blame(command, output) == blamed


def test_a_walk_that_worked_but_printed_noise_is_not_picked_as_the_failure():
    """No call failed: the call whose output has error lines is the evidence, but noise is no error line."""
    walked = call("shell", "find / -name '*.conf' 2>&1 | head -50", output=FIND_ROOT + "\n[exit code 0]")
    assert attributed_blocks([outcome(calls=[walked])]) == []


def test_the_directive_notes_the_walk_once_and_blocks_nothing():
    """What the planner is told: nothing blocked, one line saying what the walk could not read."""
    failed = outcome(calls=[shell_fail("find / -name '*.conf' > /ws/confs.txt", FIND_ROOT)])
    assert walk_notes_of([failed]) == ["find skipped 4 unreadable paths under /"]
    decision = GGSController("t", "list the conf files", GGSParams()).evaluate(
        ReplanRequest(task_id="t", failed_outcomes=[failed]), 1000)
    assert decision.directive.blocked_targets == [] and decision.megrams == []
    block = directive_block(decision.directive)
    assert "Blocked targets: none" in block
    assert "Not blocked: find skipped 4 unreadable paths under / (places a walk could not read" in block
