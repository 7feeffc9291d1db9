"""Executor tools: real files under tmp_path, real subprocesses, real HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from artoo.config.settings import load_settings
from artoo.tasks.tools import Blocks, Confinement, HeadTailBuffer, PendingAction, ToolBox, first_n, head_tail, headTail
from artoo.tasks.tools.files import glob_files, sniff_binary
from artoo.tasks.tools.locate import locate, name_matches, walk
from artoo.tasks.tools.text import join_head_tail
from artoo.tasks.tools.web import parse_ddg_html, unwrap_link


class Gate:
    """Records every question; answers with a fixed decision."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.asked: list[PendingAction] = []

    async def __call__(self, action: PendingAction) -> bool:
        self.asked.append(action)
        return self.answer


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path


def make_box(tmp_path: Path, ws: Path, gate: Gate | None = None, **kwargs) -> ToolBox:
    settings = load_settings(home=str(tmp_path / "artoo_home"), workspace=str(ws),
                             tools={"head_tail_limit": 4000, "evidence_chars": 200, "max_tool_calls": 10,
                                    "shell_timeout_s": 5.0})
    return ToolBox(settings, ws, gate or Gate(False), **kwargs)


# ------------------------------------------------------------------ text
@pytest.mark.parametrize("limit", [50, 200, 4000])
def test_head_tail_keeps_both_ends_within_limit(limit: int) -> None:
    text = "HEAD-" + "x" * 20_000 + "-TAIL"
    out = head_tail(text, limit)
    assert len(out) <= limit
    assert out.startswith("HEAD-") and out.endswith("-TAIL")
    kept = len(out) - len(out[out.index("\n…"):out.index("…\n") + 2])
    assert f"… {len(text) - kept} characters omitted …" in out


def test_head_tail_leaves_short_text_alone_and_spec_alias_agrees() -> None:
    assert head_tail("short", 4000) == "short"
    assert headTail("a" * 5000, 4000) == head_tail("a" * 5000, 4000)


def test_join_head_tail_counts_already_dropped_characters() -> None:
    out = join_head_tail("abc", "xyz", 1000, 100)
    assert out == "abc\n… 1000 characters omitted …\nxyz"


@pytest.mark.parametrize(("text", "n", "expected"), [
    ("hello", 200, "hello"), ("a" * 300, 200, "a" * 199 + "…"), ("abcdef", 3, "ab…"), ("", 5, ""),
])
def test_first_n(text: str, n: int, expected: str) -> None:
    assert first_n(text, n) == expected


def test_head_tail_buffer_bounded_on_50_mb() -> None:
    buffer = HeadTailBuffer(4000, 4000)
    chunk = b"y\n" * 32_768
    peak = 0
    for _ in range(50_000_000 // len(chunk)):
        buffer.feed(chunk)
        peak = max(peak, buffer.held)
    assert peak <= 4000 + 2 * 4000
    text = buffer.text(4000)
    assert len(text) <= 4000 and "characters omitted" in text and buffer.total >= 49_000_000


def test_head_tail_buffer_decodes_invalid_utf8_with_replacement() -> None:
    buffer = HeadTailBuffer(100, 100)
    buffer.feed(b"caf\xe9 ok")
    assert buffer.text(100) == "caf\ufffd ok"


# ------------------------------------------------------------------ read_file / write_file / glob
def test_read_file_text_relative_to_workspace(tmp_path: Path, ws: Path) -> None:
    (ws / "notes.txt").write_text("line one\nline two\n")
    result = run(make_box(tmp_path, ws).call("read_file", {"path": "notes.txt"}))
    assert result.ok and result.output == "line one\nline two\n"
    assert result.evidence == "read_file: notes.txt → line one\nline two\n"


def test_read_file_non_utf8_is_replaced_not_fatal(tmp_path: Path, ws: Path) -> None:
    (ws / "latin.txt").write_bytes(b"na\xefve caf\xe9\n")
    result = run(make_box(tmp_path, ws).call("read_file", {"path": str(ws / "latin.txt")}))
    assert result.ok and result.output == "na\ufffdve caf\ufffd\n"


@pytest.mark.parametrize(("data", "kind"), [
    (b"\x89PNG\r\n\x1a\n" + bytes(100), "PNG image"), (b"\x00\x01\x02binary", "binary data"),
    (b"%PDF-1.7\n...", "PDF document"), (b"\x7fELF\x02\x01", "ELF executable"),
])
def test_read_file_binary_is_summarised(tmp_path: Path, ws: Path, data: bytes, kind: str) -> None:
    (ws / "blob").write_bytes(data)
    result = run(make_box(tmp_path, ws).call("read_file", {"path": "blob"}))
    assert result.ok and kind in result.output and f"{len(data)} bytes" in result.output
    assert "\x00" not in result.output


@pytest.mark.parametrize(("data", "binary"), [(b"plain text\n", False), (b"tabs\tand\r\nlines", False),
                                              (b"\x01\x02\x03\x04\x05abc", True), (b"", False)])
def test_sniff_binary(data: bytes, binary: bool) -> None:
    assert (sniff_binary(data) is not None) is binary


def test_read_file_missing_or_directory_is_logical(tmp_path: Path, ws: Path) -> None:
    box = make_box(tmp_path, ws)
    missing = run(box.call("read_file", {"path": "nope.txt"}))
    folder = run(box.call("read_file", {"path": str(ws)}))
    assert not missing.ok and missing.failure_class == "logical" and "no such file" in missing.output
    assert not folder.ok and folder.failure_class == "logical" and "directory" in folder.output


def test_read_file_large_file_is_capped(tmp_path: Path, ws: Path) -> None:
    (ws / "big.log").write_text("start\n" + "z" * 3_000_000 + "\nend")
    result = run(make_box(tmp_path, ws).call("read_file", {"path": "big.log"}))
    assert result.ok and len(result.output) <= 4000
    assert result.output.startswith("start") and "file truncated" in result.output


def test_write_file_new_file_needs_no_confirmation(tmp_path: Path, ws: Path) -> None:
    gate = Gate(False)
    result = run(make_box(tmp_path, ws, gate).call("write_file", {"path": "out/report.md", "content": "# hi"}))
    assert result.ok and "created" in result.output
    assert (ws / "out" / "report.md").read_text() == "# hi"
    assert gate.asked == []


def test_write_file_existing_denied_leaves_file_unchanged(tmp_path: Path, ws: Path) -> None:
    target = ws / "keep.txt"
    target.write_text("original")
    gate = Gate(False)
    box = make_box(tmp_path, ws, gate)
    result = run(box.call("write_file", {"path": "keep.txt", "content": "new"}))
    assert target.read_text() == "original"
    assert not result.ok and result.failure_class == "environmental"
    assert result.output.startswith(f"[LAW1] denied: write_file {target}")
    assert [a.targets for a in gate.asked] == [[str(target)]] and gate.asked[0].tool == "write_file"
    assert box.law1_denials == gate.asked and box.approvals == []


def test_write_file_existing_approved_is_written(tmp_path: Path, ws: Path) -> None:
    target = ws / "keep.txt"
    target.write_text("original")
    gate = Gate(True)
    box = make_box(tmp_path, ws, gate)
    result = run(box.call("write_file", {"path": str(target), "content": "new"}))
    assert result.ok and "overwrote" in result.output and target.read_text() == "new"
    assert box.approvals == gate.asked and box.law1_denials == []


def test_write_file_needs_string_content(tmp_path: Path, ws: Path) -> None:
    result = run(make_box(tmp_path, ws).call("write_file", {"path": "x.txt", "content": 5}))
    assert not result.ok and result.failure_class == "logical" and not (ws / "x.txt").exists()


def test_glob_recursive_and_pathed(tmp_path: Path, ws: Path) -> None:
    for rel in ("a.py", "pkg/b.py", "pkg/deep/c.py", "pkg/readme.md", ".git/hooks/d.py"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("x")
    result = run(make_box(tmp_path, ws).call("glob", {"pattern": "*.py"}))
    assert result.ok
    assert result.output.splitlines() == sorted(str(ws / p) for p in ("a.py", "pkg/b.py", "pkg/deep/c.py"))
    assert glob_files("pkg/*.md", ws) == str(ws / "pkg" / "readme.md")
    assert glob_files(str(ws / "pkg" / "**" / "c.py"), tmp_path) == str(ws / "pkg" / "deep" / "c.py")


def test_glob_no_match_is_a_valid_answer(tmp_path: Path, ws: Path) -> None:
    result = run(make_box(tmp_path, ws).call("glob", {"pattern": "*.rs"}))
    assert result.ok and "no files match" in result.output


def test_glob_caps_results(ws: Path) -> None:
    for i in range(30):
        (ws / f"f{i}.txt").write_text("x")
    out = glob_files("*.txt", ws, cap=10)
    assert len([line for line in out.splitlines() if line.endswith(".txt")]) == 10 and "stopped after" in out


# ------------------------------------------------------------------ locate
@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    for rel in ("Documents/Invoice-2024.pdf", "Documents/notes.txt", "Music/song.mp3", ".cache/invoice.tmp",
                "projects/app/main.py"):
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text("x")
    monkeypatch.setenv("HOME", str(path))
    return path


@pytest.mark.parametrize(("name", "query", "hit"), [
    ("Invoice-2024.pdf", "invoice", True), ("Invoice-2024.pdf", "*.pdf", True), ("notes.txt", "*.pdf", False),
    ("song.mp3", "SONG", True), ("a.py", "b", False),
])
def test_name_matches(name: str, query: str, hit: bool) -> None:
    assert name_matches(name, query) is hit


def test_locate_walk_skips_hidden_unless_asked(home: Path) -> None:
    assert walk("invoice", home).paths == [str(home / "Documents" / "Invoice-2024.pdf")]
    dotted = walk(".cache", home).paths
    assert str(home / ".cache") in dotted


def test_locate_walk_is_bounded(home: Path) -> None:
    answer = walk("zzz", home, visit_cap=2)
    assert not answer.complete and "results may be incomplete" in answer.render("zzz", "here")
    assert locate("*.mp3", home, use_index=False).paths == [str(home / "Music" / "song.mp3")]


def test_locate_tool_walks_home_without_an_index(tmp_path: Path, ws: Path, home: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # no plocate/locate: the walk answers
    box = make_box(tmp_path, ws)
    found = run(box.call("locate", {"query": "*.pdf"}))
    none = run(box.call("locate", {"query": "no-such-file-anywhere"}))
    assert found.ok and found.output == str(home / "Documents" / "Invoice-2024.pdf")
    assert none.ok and "no files match" in none.output


# ------------------------------------------------------------------ blocks, arguments, evidence
def test_blocked_tool_is_refused_and_hidden_from_specs(tmp_path: Path, ws: Path) -> None:
    box = make_box(tmp_path, ws, blocks=Blocks(tools=frozenset({"shell"})),
                   confinement=Confinement(search_url="http://127.0.0.1:9/html/"))
    names = [s["function"]["name"] for s in box.specs()]
    assert names == ["locate", "glob", "read_file", "write_file", "search"]
    result = run(box.call("shell", {"command": "echo hi"}))
    assert not result.ok and result.failure_class == "logical"
    assert result.output == "tool shell is blocked by the GGS for this round"


def test_search_is_not_offered_where_its_service_cannot_be_reached(tmp_path: Path, ws: Path) -> None:
    box = make_box(tmp_path, ws, confinement=Confinement(search_url="https://no-such-host.invalid/html/"))
    assert "search" not in [s["function"]["name"] for s in box.specs()]
    assert "shell" in [s["function"]["name"] for s in box.specs()]


def test_a_blocked_method_is_refused_and_the_shell_stays(tmp_path: Path, ws: Path) -> None:
    box = make_box(tmp_path, ws, blocks=Blocks(tools=frozenset({"shell:grep -E"})))
    refused = run(box.call("shell", {"command": "grep -E 'x' notes.txt"}))
    assert not refused.ok and refused.failure_class == "logical" and "`grep -E` is blocked" in refused.output
    assert "shell" in [s["function"]["name"] for s in box.specs()]


def test_blocked_target_is_refused_naming_it(tmp_path: Path, ws: Path) -> None:
    (ws / "secret").mkdir()
    (ws / "secret" / "a.txt").write_text("x")
    box = make_box(tmp_path, ws, blocks=Blocks(targets=("secret/a.txt",)))
    result = run(box.call("read_file", {"path": "secret/a.txt"}))
    shelled = run(box.call("shell", {"command": "cat secret/a.txt"}))
    for r in (result, shelled):  # the target as normalised (#13: exact targets, never substrings)
        assert not r.ok and r.failure_class == "environmental" and repr(str(ws / "secret" / "a.txt")) in r.output
    assert run(box.call("read_file", {"path": "secret/../secret/other"})).output.startswith("no such file")
    assert run(box.call("read_file", {"path": "secret/./a.txt"})).output.startswith("read_file refused")
    # a name that merely contains the blocked one is a different target
    (ws / "secret" / "a.txt.bak").write_text("y")
    assert run(box.call("read_file", {"path": "secret/a.txt.bak"})).ok


@pytest.mark.parametrize(("name", "key", "value", "refused"), [
    ("shell", "command", "ls {x}", True),  # the pair memory says failed
    ("shell", "command", "ls {y}", False),  # the same tool on another target
    ("glob", "pattern", "{x}/*", False),  # another tool on the same target
    ("read_file", "path", "{x}/a.txt", False),
])
def test_blocked_pair_refuses_only_that_tool_on_that_target(tmp_path: Path, ws: Path, name: str, key: str,
                                                             value: str, refused: bool) -> None:
    for d in ("x", "y"):
        (ws / d).mkdir()
        (ws / d / "a.txt").write_text("x")
    box = make_box(tmp_path, ws, blocks=Blocks(pairs=frozenset({("shell", str(ws / "x"))})))
    assert "shell" in [s["function"]["name"] for s in box.specs()]
    result = run(box.call(name, {key: value.format(x=ws / "x", y=ws / "y")}))
    assert result.ok is not refused, result.output
    if refused:
        assert result.failure_class == "logical" and "memory says shell on" in result.output


def test_allowed_roots_refuse_outside_paths(tmp_path: Path, ws: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("x")
    box = make_box(tmp_path, ws, confinement=Confinement(read_roots=(ws,)))
    result = run(box.call("read_file", {"path": str(outside)}))
    assert not result.ok and result.failure_class == "environmental" and "outside the allowed roots" in result.output


@pytest.mark.parametrize(("name", "arguments", "message"), [
    ("teleport", {"x": 1}, "unknown tool 'teleport'"),
    ("read_file", {}, "needs a non-empty string argument 'path'"),
    ("shell", {"command": "  "}, "needs a non-empty string argument 'command'"),
    ("glob", "not json", "needs a non-empty string argument 'pattern'"),
])
def test_bad_calls_are_logical_failures(tmp_path: Path, ws: Path, name: str, arguments, message: str) -> None:
    result = run(make_box(tmp_path, ws).call(name, arguments))
    assert not result.ok and result.failure_class == "logical" and message in result.output
    assert result.evidence.startswith(f"{name}: ")


def test_arguments_may_arrive_as_json_text(tmp_path: Path, ws: Path) -> None:
    result = run(make_box(tmp_path, ws).call("shell", '{"command": "echo 42"}'))
    assert result.ok and result.output.startswith("42")


def test_evidence_keeps_first_200_characters_and_how_the_command_ended(tmp_path: Path, ws: Path) -> None:
    result = run(make_box(tmp_path, ws).call("shell", {"command": "printf '%0300d' 0"}))
    assert result.evidence == "shell: printf '%0300d' 0 → " + "0" * 199 + "… [exit code 0]"


def test_gate_that_raises_counts_as_denial(tmp_path: Path, ws: Path) -> None:
    (ws / "f").write_text("x")

    async def broken(action: PendingAction) -> bool:
        raise RuntimeError("nobody home")

    box = make_box(tmp_path, ws, broken)
    result = run(box.call("shell", {"command": "rm f"}))
    assert not result.ok and (ws / "f").exists() and "gate failed: nobody home" in box.law1_denials[0].reason


# ------------------------------------------------------------------ search
DDG_PAGE = """<html><body>
<div class="result results_links web-result"><div class="links_main result__body">
<h2 class="result__title"><a rel="nofollow" class="result__a"
 href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fdocs.python.org%2F3%2F&amp;rut=abc">Python <b>3</b> docs</a></h2>
<a class="result__snippet" href="x">The official <b>Python</b> documentation.</a></div></div>
<div class="result"><h2><a class="result__a" href="https://example.org/b">Second</a></h2>
<div class="result__snippet">Snippet two</div></div>
</body></html>"""
EMPTY_PAGE = '<html><body><div class="no-results">No results.</div></body></html>'


def test_parse_ddg_html_unwraps_links() -> None:
    hits = parse_ddg_html(DDG_PAGE)
    assert [(h.title, h.url, h.snippet) for h in hits] == [
        ("Python 3 docs", "https://docs.python.org/3/", "The official Python documentation."),
        ("Second", "https://example.org/b", "Snippet two")]
    assert parse_ddg_html(EMPTY_PAGE) == []
    assert unwrap_link("//example.com/x") == "https://example.com/x"


@pytest.fixture
def ddg_server():
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            query = parse_qs(urlparse(self.path).query).get("q", [""])[0]
            body = (EMPTY_PAGE if query == "nothing" else DDG_PAGE).encode()
            self.send_response(503 if query == "broken" else 200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/html/"
    server.shutdown()
    server.server_close()


def test_search_against_local_server(tmp_path: Path, ws: Path, ddg_server: str) -> None:
    box = make_box(tmp_path, ws, confinement=Confinement(search_url=ddg_server))
    found = run(box.call("search", {"query": "python docs"}))
    empty = run(box.call("search", {"query": "nothing"}))
    broken = run(box.call("search", {"query": "broken"}))
    assert found.ok and found.output.startswith("1. Python 3 docs\n   https://docs.python.org/3/")
    assert empty.ok and empty.output == "no results"
    assert not broken.ok and broken.failure_class == "environmental" and "HTTP 503" in broken.output


def test_search_offline_is_environmental(tmp_path: Path, ws: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    box = make_box(tmp_path, ws, confinement=Confinement(search_url=f"http://127.0.0.1:{port}/html/"))
    result = run(box.call("search", {"query": "anything"}))
    assert not result.ok and result.failure_class == "environmental"
    assert result.output.startswith("web search unavailable: ")
