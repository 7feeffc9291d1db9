"""What the sandbox stopped, as the model is told it: the pure decision over a command and its result.

The real-sandbox side (a pkill of a host process, a UDP send, through bubblewrap) is in
tests/reliability/test_sandbox.py.
"""

from __future__ import annotations

import pytest

from artoo.tasks.tools.blocks import NETWORK, PROCESSES, READ_ONLY, Blocks, judge

NOTES = {"processes": PROCESSES, "network": NETWORK, "read-only": READ_ONLY}
DNS = "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>"

CASES = [  # (command, output, exit code (None: timed out), network, notes, failed whatever the exit code)
    # processes outside the sandbox: signalled in vain, or not listed
    ("pkill -f myserver", "", 0, False, ["processes"], True),  # matched bwrap's pid 1, which ignores it
    ("pkill -f myserver", "", 0, True, ["processes"], True),  # the network changes nothing about processes
    ("kill 4242", "bash: line 1: kill: (4242) - No such process", 1, False, ["processes"], True),
    ("killall -9 nginx", "nginx: no process found", 1, False, ["processes"], True),
    ("sudo -u www timeout 5 pkill -HUP nginx", "", 0, False, ["processes"], True),  # wrappers unwrapped
    ("bash -lc 'pkill -f myserver'", "", 0, False, ["processes"], True),
    ("kill $(pgrep -f myserver)", "kill: usage", 2, False, ["processes"], True),
    ("pgrep -f myserver | xargs -r kill -TERM", "", 0, False, ["processes"], True),
    ("systemctl restart nginx", "System has not been booted with systemd", 1, False, ["processes"], True),
    ("ps aux", "USER PID\nroot 1 bwrap", 0, False, ["processes"], False),  # true, but only the sandbox's
    ("ps aux | grep nginx", "", 1, False, ["processes"], False),
    ("pgrep nginx || echo not running", "not running", 0, False, ["processes"], False),
    # its own processes: a line that started them may signal them
    ("sleep 30 & kill %1", "", 0, False, [], False),
    ("python3 -m http.server & sleep 1; kill $!", "", 0, False, [], False),
    ("sleep 30 & pkill -f 'sleep 30'", "", 0, False, [], False),
    ("sleep 30 & pkill -f 'sleep 31'", "", 1, False, ["processes"], False),  # told when it failed, never failed
    ("kill -l", "HUP INT QUIT", 0, False, [], False),
    ("command -v pkill", "/usr/bin/pkill", 0, False, [], False),
    # words in strings run nothing
    ("echo 'pkill -f myserver'", "pkill -f myserver", 0, False, [], False),
    ("grep -n 'kill -9' notes.txt", "3:kill -9 1234", 0, False, [], False),
    ("printf 'curl http://x\\n' > run.sh", "", 0, False, [], False),
    # no network
    ("echo hi > /dev/udp/127.0.0.1/9999", "", 0, False, ["network"], True),  # landed on the private loopback
    ("echo hi > /dev/udp/127.0.0.1/9999", "", 0, True, [], False),
    ("exec 3<>/dev/tcp/127.0.0.1/6379", "bash: connect: Connection refused", 1, False, ["network"], True),
    ("nc -u -w1 127.0.0.1 9999 < msg.txt", "", 0, False, ["network"], True),
    ("getent hosts example.com", "", 2, False, ["network"], True),  # a DNS lookup fails without a word
    ("getent passwd root", "root:x:0:0:root:/root:/bin/bash", 0, False, [], False),
    ("curl -s http://127.0.0.1:8000/health", "", 7, False, ["network"], True),
    ("curl --version", "curl 7.88.1", 0, False, [], False),
    ("ping 127.0.0.1", "64 bytes from 127.0.0.1", None, False, ["network"], True),
    ("nc -l 9999", "", None, False, [], False),  # a listener of its own
    ("ss -ltn", "State Recv-Q", 0, False, ["network"], False),  # only the private loopback's sockets
    ("python3 -m http.server 8000 & sleep 1; curl -s localhost:8000", "<html>", 0, False, [], False),
    ("python3 fetch.py", DNS, 1, False, ["network"], False),  # by its error line: failed already, by the sandbox
    ("python3 fetch.py", DNS, 1, True, [], False),
    ("python3 fetch.py", DNS, 0, False, [], False),  # it printed the words and did not fail: a log, maybe
    ("grep refused app.log", "app.log:3: Connection refused", 0, False, [], False),
    ("python3 serve.py & python3 client.py", "ConnectionRefusedError: [Errno 111] Connection refused", 1, False,
     [], False),  # its own server was not up yet: no block of the sandbox
    # the read-only root
    ("echo out > /etc/motd", "bash: line 1: /etc/motd: Read-only file system", 1, False, ["read-only"], False),
    ("python3 save.py", "OSError: [Errno 30] Read-only file system: '/etc/x'", 1, True, ["read-only"], False),
    ("cat notes.txt", "the disk went Read-only file system yesterday", 0, False, [], False),
    # nothing stopped
    ("ls -la", "total 0", 0, False, [], False),
    ("false", "", 1, False, [], False),
]


@pytest.mark.parametrize(("command", "output", "code", "network", "notes", "failed"), CASES,
                         ids=[f"{c[0][:40]}|{c[2]}|{'net' if c[3] else 'offline'}" for c in CASES])
def test_judge(command: str, output: str, code: int | None, network: bool, notes: list[str], failed: bool):
    assert judge(command, output, code, network) == Blocks(tuple(NOTES[n] for n in notes), failed)
