"""Error lines as real tools print them: which path failed, and whether it was a write into a missing folder.

Pure and table-driven; how the GGS uses them is in tests/test_failure_model.py.
"""

from __future__ import annotations

import pytest

from artoo.tasks.blame.error_lines import ErrorPath, error_paths


def ep(path: str, missing_parent: bool = False, opened: bool = False) -> ErrorPath:
    return ErrorPath(path, missing_parent, opened)


@pytest.mark.parametrize(("output", "written", "expected"), [
    # coreutils, quoted (GNU's '…' and ‘…’), with verbs before the path
    ("cp: cannot stat 'a.txt': No such file or directory", (), [ep("a.txt")]),
    ("cp: cannot create regular file 'backup/notes.txt': No such file or directory", (),
     [ep("backup/notes.txt", True)]),
    ("cp: cannot create regular file '/srv/b/r.csv': Permission denied", (), [ep("/srv/b/r.csv")]),
    ("mkdir: cannot create directory ‘reports/2024/q1’: No such file or directory", (),
     [ep("reports/2024/q1", True)]),
    ("touch: cannot touch 'out/a.txt': No such file or directory", (), [ep("out/a.txt", True)]),
    ("ln: failed to create symbolic link 'links/a': No such file or directory", (), [ep("links/a", True)]),
    ("head: cannot open 'logs/db.log' for reading: No such file or directory", (), [ep("logs/db.log")]),
    ("ls: cannot access 'x y.txt': No such file or directory", (), [ep("x y.txt")]),
    ("find: ‘/system/a/b’: No such file or directory", (), [ep("/system/a/b")]),
    ("chmod: changing permissions of 'x.sh': Operation not permitted", (), [ep("x.sh")]),
    # mv names both paths; a missing source says "cannot stat", so "to 'b'" is the one that failed
    ("mv: cannot move 'draft.md' to 'reports/final.md': No such file or directory", (),
     [ep("reports/final.md", True)]),
    ("mv: cannot move 'a' to '/srv/a': Permission denied", (), [ep("/srv/a")]),
    # GNU's words for a move or copy into a folder that is not there: the folder can be made
    ("mv: cannot move 'logs/a.log' to 'archive/': Not a directory", (), [ep("archive/", True)]),
    ("cp: cannot create regular file 'archive/': Not a directory", (), [ep("archive/", True)]),
    ("mv: cannot stat 'afile/': Not a directory", (), [ep("afile/")]),  # a source, never made
    ("mv: target 'archive/': No such file or directory", (), [ep("archive/", True)]),  # several sources
    ("cp: target 'out': No such file or directory", (), [ep("out", True)]),
    ("mv: target '/srv/a/': Permission denied", (), [ep("/srv/a/")]),
    ("cp: cannot create regular file 'notes.txt/x': Not a directory", (), [ep("notes.txt/x")]),
    # unquoted: prog: [line N: ][verb ]PATH: [Cannot open: ]ERRNO
    ("cat: notes/x.txt: No such file or directory", (), [ep("notes/x.txt")]),
    ("grep: logs/*.log: No such file or directory", (), [ep("logs/*.log")]),
    ("sed: can't read conf/app.ini: No such file or directory", (), [ep("conf/app.ini")]),
    ("sed: couldn't open temporary file /home/u/Documents/sedDtvZbs: Read-only file system", (),
     [ep("/home/u/Documents/sedDtvZbs")]),  # sed -i on a read-only folder: its temp file, not the input
    ("sort: cannot read: x.txt: No such file or directory", (), [ep("x.txt")]),
    ("tar: /backup/l.tgz: Cannot open: No such file or directory", (), [ep("/backup/l.tgz")]),
    ("bash: cd: /srv/x: No such file or directory", (), [ep("/srv/x")]),
    # … but a command that writes after entering a missing folder would have written there: make it
    ("bash: line 1: cd: reports: No such file or directory", ("summary.md",), [ep("reports", True)]),
    ("bash: line 1: cd: reports: Permission denied", ("summary.md",), [ep("reports")]),
    ("wc: report/n.txt: No such file or directory\n     3 total", (), [ep("report/n.txt")]),
    # bash says the same for a missing input and an output into a missing folder: the command decides
    ("bash: line 1: reports/r.md: No such file or directory", ("reports/r.md",), [ep("reports/r.md", True)]),
    ("bash: line 1: in.txt: No such file or directory", ("out.txt",), [ep("in.txt")]),
    ("bash: line 1: notes/todo.txt: Permission denied", ("notes/todo.txt",), [ep("notes/todo.txt")]),
    ("tee: out/copy.csv: No such file or directory", (), [ep("out/copy.csv", True)]),
    ("sh: 1: cannot create out/x: Directory nonexistent", (), [ep("out/x", True)]),
    # Python: the path after the errno text, never the script in the traceback's File line
    ('  File "/ws/analyze.py", line 3, in <module>\n'
     "FileNotFoundError: [Errno 2] No such file or directory: 'data.csv'", (), [ep("data.csv", opened=True)]),
    ("python3: can't open file '/ws/run.py': [Errno 2] No such file or directory", (), [ep("/ws/run.py", opened=True)]),
    ("PermissionError: [Errno 13] Permission denied: '/srv/r.csv'", (), [ep("/srv/r.csv")]),  # no doubt there
    # lines without an errno text are no error lines; the program name alone is no path
    ("bash: line 1: tree: command not found", (), []),
    ("curl: (6) Could not resolve host: example.invalid", (), []),
    ("mkdir: Permission denied", (), []),
    ("cat: a: No such file or directory\ncat: a: No such file or directory", (), [ep("a")]),  # once
])
def test_error_paths(output, written, expected):
    assert error_paths(output, written) == expected
