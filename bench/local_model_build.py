"""The local-model recipe's ``build``: llama-server from the llama-cpp-python sdist, or llama-cpp-python[server].

Split from ``local_model.py`` (the house limit is 400 lines a file) because building is its own
concept: the sdist fetched with pip and unpacked once, cmake and make with their percent done shown
from the build's output, the venv that ``pip install`` compiles llama.cpp into, and the quick checks
that say a server is already there.  It needs the cache of ``local_model_fetch`` and nothing of serving.
Standard library only.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

# The recipe's import shim, the same in each of its modules: installed, they are ``artoo.bench.*``;
# run as ``python bench/local_model.py``, bench/ is on sys.path and the siblings are top-level modules.
if __package__:
    from artoo.bench import local_model_fetch as fetch
    from artoo.bench import local_model_verify as verify
else:
    import local_model_fetch as fetch
    import local_model_verify as verify
RecipeError, say = verify.RecipeError, verify.say  # the recipe's one error, and its voice on stderr

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
    t0 = time.monotonic()
    shown, beat = -1, t0
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
                say(f"  {label}: {pct}% ({verify.elapsed(t0)})")
            elif now - beat > 30:
                beat = now
                say(f"  {label}: still working ({verify.elapsed(t0)}; log {log})")
        rc = proc.wait()
    if rc != 0:
        tail = log.read_text(errors="replace").splitlines()[-25:]
        raise RecipeError(f"{label} failed (exit {rc}); the end of {log}:\n" + "\n".join(tail))
    say(f"  {label}: done in {verify.elapsed(t0)}")


def _runs(cmd: list[str]) -> str | None:
    """The output of a quick check command, or None if it fails."""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (done.stdout + done.stderr).strip() if done.returncode == 0 else None


def fetch_sdist(cache: fetch.Cache) -> Path:
    if cache.sdist.exists():
        return cache.sdist
    cache.sdist_dir.mkdir(parents=True, exist_ok=True)
    say(f"downloading the llama-cpp-python {verify.LCP_VERSION} sdist (77 MB) into {cache.sdist_dir}")
    cmd = [*fetch.pip_command(), "download", "--no-deps", "--no-binary", ":all:", "--disable-pip-version-check",
           "-d", str(cache.sdist_dir), f"llama-cpp-python=={verify.LCP_VERSION}"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0 or not cache.sdist.exists():
        raise RecipeError(f"pip could not download the llama-cpp-python sdist:\n{done.stdout}{done.stderr}")
    return cache.sdist


def unpack_sdist(cache: fetch.Cache) -> Path:
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


def build_llama_server(cache: fetch.Cache, jobs: int) -> Path:
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


def lcp_python(cache: fetch.Cache) -> Path:
    return cache.lcp_venv / "bin" / "python"


def lcp_ready(python: Path) -> str | None:
    check = "import llama_cpp, llama_cpp.server.app, uvicorn; print(llama_cpp.__version__)"
    return _runs([str(python), "-c", check]) if python.exists() else None


def install_llama_cpp_python(cache: fetch.Cache, jobs: int) -> Path:
    python = lcp_python(cache)
    if version := lcp_ready(python):
        say(f"llama-cpp-python[server] already installed: {cache.lcp_venv} (version {version})")
        return python
    cache.logs.mkdir(parents=True, exist_ok=True)
    log = cache.logs / "install-llama-cpp-python.log"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(cache.lcp_venv)], check=True)
    say(f"installing llama-cpp-python[server]=={verify.LCP_VERSION} into {cache.lcp_venv}: pip compiles llama.cpp "
        f"(≈ 10–17 min on 2 cores; log {log})")
    env = {**os.environ, "CMAKE_BUILD_PARALLEL_LEVEL": str(jobs)}
    if isa := isa_flags(cpu_flags()):  # pip's build of llama.cpp takes its cmake options from CMAKE_ARGS
        env["CMAKE_ARGS"] = " ".join(filter(None, [env.get("CMAKE_ARGS", ""), *isa]))
    _run_with_progress([str(python), "-m", "pip", "install", "-v", "--disable-pip-version-check",
                        f"llama-cpp-python[server]=={verify.LCP_VERSION}"], log, "pip install", env=env)
    if not (version := lcp_ready(python)):
        raise RecipeError(f"llama-cpp-python installed but does not import; see {log}")
    return python


def cmd_build(cache: fetch.Cache, args: argparse.Namespace) -> None:
    with fetch.locked(cache, f"build-{args.server}"):
        if args.server == "llama-server":
            build_llama_server(cache, args.jobs)
        else:
            install_llama_cpp_python(cache, args.jobs)

