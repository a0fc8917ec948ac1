"""The running CPU's instruction-set features, read without LLVM.

A built library records the CPU features its code may use (LLVM names such as
``avx2``, ``fma``, ``avx512f``, ``sse4.2``); before loading it, the runtime
checks that this CPU has them, so that a library built for a newer CPU fails
with a clear error instead of SIGILL.

Only features in :data:`DETECTABLE` are ever checked: those we can read
reliably from the operating system (``/proc/cpuinfo`` on Linux, ``sysctl`` on
macOS). A feature outside that set is neither required nor reported missing.
On a platform where nothing can be read, :func:`host_features` returns None
and the check is skipped (see docs/aot.md).
"""
from __future__ import annotations

import functools
import platform
import sys

# /proc/cpuinfo flag -> LLVM feature name (x86)
_LINUX_X86 = {
    "lm": "64bit", "cx8": "cx8", "cmov": "cmov", "mmx": "mmx", "fxsr": "fxsr",
    "sse": "sse", "sse2": "sse2", "pni": "sse3", "ssse3": "ssse3", "sse4_1": "sse4.1",
    "sse4_2": "sse4.2", "sse4a": "sse4a", "popcnt": "popcnt", "abm": "lzcnt", "cx16": "cx16",
    "lahf_lm": "sahf", "movbe": "movbe", "avx": "avx", "avx2": "avx2", "fma": "fma", "fma4": "fma4",
    "xop": "xop", "tbm": "tbm", "f16c": "f16c", "bmi1": "bmi", "bmi2": "bmi2", "adx": "adx",
    "aes": "aes", "pclmulqdq": "pclmul", "sha_ni": "sha", "rdrand": "rdrnd", "rdseed": "rdseed",
    "fsgsbase": "fsgsbase", "xsave": "xsave", "xsaveopt": "xsaveopt", "xsavec": "xsavec",
    "xsaves": "xsaves", "clflushopt": "clflushopt", "clwb": "clwb", "clzero": "clzero",
    "invpcid": "invpcid", "rdpid": "rdpid", "3dnowprefetch": "prfchw", "gfni": "gfni",
    "vaes": "vaes", "vpclmulqdq": "vpclmulqdq", "avx_vnni": "avxvnni",
    "avx512f": "avx512f", "avx512cd": "avx512cd", "avx512bw": "avx512bw", "avx512dq": "avx512dq",
    "avx512vl": "avx512vl", "avx512ifma": "avx512ifma", "avx512vbmi": "avx512vbmi",
    "avx512_vbmi2": "avx512vbmi2", "avx512_vnni": "avx512vnni", "avx512_bitalg": "avx512bitalg",
    "avx512_vpopcntdq": "avx512vpopcntdq", "avx512_bf16": "avx512bf16", "avx512_fp16": "avx512fp16",
    "avx512_vp2intersect": "avx512vp2intersect",
}

# macOS sysctl machdep.cpu.{features,leaf7_features} words -> LLVM feature names
_DARWIN_X86 = {
    "SSE": "sse", "SSE2": "sse2", "SSE3": "sse3", "SSSE3": "ssse3", "SSE4.1": "sse4.1",
    "SSE4.2": "sse4.2", "POPCNT": "popcnt", "AVX1.0": "avx", "AVX2": "avx2", "FMA": "fma",
    "F16C": "f16c", "BMI1": "bmi", "BMI2": "bmi2", "MOVBE": "movbe", "CX16": "cx16",
    "AES": "aes", "PCLMULQDQ": "pclmul", "RDRAND": "rdrnd", "RDSEED": "rdseed", "ADX": "adx",
    "AVX512F": "avx512f", "AVX512CD": "avx512cd", "AVX512BW": "avx512bw", "AVX512DQ": "avx512dq",
    "AVX512VL": "avx512vl", "AVX512IFMA": "avx512ifma", "AVX512VBMI": "avx512vbmi",
}

#: the features the runtime can check (LLVM names)
DETECTABLE = frozenset(_LINUX_X86.values())


def machine() -> str:
    """The architecture as in an LLVM triple: 'x86_64', 'aarch64', ..."""
    m = platform.machine().lower()
    return {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}.get(m, m)


def triple_arch(triple: str) -> str:
    arch = triple.split("-", 1)[0].lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(arch, arch)


@functools.cache
def host_features() -> frozenset[str] | None:
    """The detectable features of this CPU (LLVM names), or None if they cannot be read."""
    if machine() != "x86_64":
        return None
    if sys.platform.startswith("linux"):
        return _linux()
    if sys.platform == "darwin":
        return _darwin()
    return None


def _linux() -> frozenset[str] | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:   # (utf-8: loaded already)
            for line in f:
                if line.startswith("flags"):
                    flags = line.partition(":")[2].split()
                    return frozenset(_LINUX_X86[f] for f in flags if f in _LINUX_X86)
    except OSError:
        pass
    return None


def _darwin() -> frozenset[str] | None:
    import subprocess          # macOS only: not imported on Linux (it costs ~2 ms of every import)
    try:
        out = subprocess.run(["sysctl", "-n", "machdep.cpu.features", "machdep.cpu.leaf7_features"],
                             capture_output=True, text=True, timeout=5, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    words = out.split()
    if not words:
        return None
    return frozenset(_DARWIN_X86[w] for w in words if w in _DARWIN_X86) | {"64bit"}


def checkable() -> frozenset[str]:
    """The features this platform's operating system reports (LLVM names)."""
    return DETECTABLE if sys.platform != "darwin" else frozenset(_DARWIN_X86.values()) | {"64bit"}


def missing_features(required: "list[str] | frozenset[str]") -> list[str] | None:
    """The required features this CPU lacks (sorted), or None if the CPU cannot be inspected."""
    have = host_features()
    if have is None:
        return None
    known = checkable()
    return sorted(f for f in required if f in known and f not in have)
