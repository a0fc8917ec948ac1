"""Ahead-of-time build, the object-code end: link the kernels' objects into
MODULE.so, and write MODULE.h and the MODULE.json manifest.

compiler/build.py runs the pipeline on a module's signed kernels and hands the
results (:class:`BuiltKernel`) to :func:`write_library`. The objects are linked
by the system C compiler into one shared library; the header declares each
entry point (docs/abi.md) and the manifest records what ``runtime.load`` checks
(runtime/manifest.py).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from compiler.backend import pool
from compiler.backend import target as targets
from runtime import cpu as runtime_cpu
from runtime.abi import ABI_VERSION, DTYPE_NAMES, ERROR_BASE, parse_spec
from runtime.cache import sha256
from runtime.manifest import EMBED_PREFIX, FORMAT, manifest_sha256

EMIT_KINDS = ("ll", "asm", "ir")


class BuildError(Exception):
    """A build cannot proceed; the message is one line for the user."""


# ---- CPU features of named targets (what runtime.load checks) ---------------------------------

_BASE = {"64bit", "cx8", "cmov", "mmx", "fxsr", "sse", "sse2"}
_V2 = _BASE | {"sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "cx16", "sahf"}
_V3 = _V2 | {"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave"}
_V4 = _V3 | {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}
_SNB = _V2 | {"avx", "xsave", "pclmul", "aes"}
_HSW = _V3 | {"aes", "pclmul", "rdrnd", "fsgsbase"} | (_SNB - _V2)
_BDW = _HSW | {"adx", "rdseed", "prfchw"}
_SKL = _BDW | {"clflushopt", "xsavec", "xsaves"}
_SKX = _SKL | _V4 | {"clwb"}
_CLX = _SKX | {"avx512vnni"}
_ICL = _CLX | {"avx512vbmi", "avx512vbmi2", "avx512ifma", "avx512bitalg", "avx512vpopcntdq",
               "gfni", "vaes", "vpclmulqdq", "rdpid", "sha"}
_ZN1 = _V3 | {"aes", "pclmul", "rdrnd", "rdseed", "adx", "sha", "clzero", "sse4a", "fsgsbase",
              "clflushopt", "xsavec", "xsaves", "prfchw"}
_ZN2 = _ZN1 | {"clwb", "rdpid"}
_ZN3 = _ZN2 | {"vaes", "vpclmulqdq", "invpcid"}
_ZN4 = _ZN3 | _V4 | {"avx512ifma", "avx512vbmi", "avx512vbmi2", "avx512vnni", "avx512bitalg",
                     "avx512vpopcntdq", "avx512bf16", "gfni"}
CPU_FEATURES: dict[str, set[str]] = {
    "x86-64": _BASE, "x86-64-v2": _V2, "x86-64-v3": _V3, "x86-64-v4": _V4,
    "nehalem": _V2, "westmere": _V2 | {"pclmul", "aes"}, "sandybridge": _SNB,
    "ivybridge": _SNB | {"f16c", "rdrnd", "fsgsbase"}, "haswell": _HSW, "broadwell": _BDW,
    "skylake": _SKL, "skylake-avx512": _SKX, "cascadelake": _CLX, "cooperlake": _CLX | {"avx512bf16"},
    "icelake-client": _ICL, "icelake-server": _ICL, "tigerlake": _ICL,
    "sapphirerapids": _ICL | {"avx512bf16", "avx512fp16", "avxvnni"},
    "alderlake": _V3 | {"aes", "pclmul", "rdrnd", "rdseed", "adx", "sha", "gfni", "vaes",
                        "vpclmulqdq", "avxvnni", "fsgsbase", "clflushopt", "clwb", "xsavec", "xsaves"},
    "znver1": _ZN1, "znver2": _ZN2, "znver3": _ZN3, "znver4": _ZN4,
}


def required_features(target: targets.Target) -> list[str] | None:
    """The checkable CPU features code for `target` may use; None if aotx does not know them."""
    if target.features:
        return sorted(target.feature_set & runtime_cpu.DETECTABLE)
    known = CPU_FEATURES.get(target.cpu)
    if known is None:
        return None
    return sorted(known & runtime_cpu.DETECTABLE)


# ---- the library ---------------------------------------------------------------------------------

@dataclass
class BuiltKernel:
    """One kernel ready to link: its object code, manifest entry and optional artifacts."""

    name: str                      # attribute of the module = Python name in runtime.load
    symbol: str                    # exported C symbol
    info: dict[str, Any] = field(default_factory=dict)       # its entry in the manifest
    object: bytes = b""
    llvm_optimized: str = ""
    asm: str = ""
    ir_text: str = ""


@dataclass
class BuildResult:
    library: Path
    header: Path
    manifest: Path
    extra: list[Path]
    kernels: list[str]


def find_cc() -> list[str]:
    """The system C compiler as an argv prefix: $CC, else cc."""
    cc = os.environ.get("CC", "").split() or ["cc"]
    if shutil.which(cc[0]) is None:
        raise BuildError(f"no C compiler found: {cc[0]!r} is not on PATH; aotx build links the "
                         f"shared library with it (install cc, or set CC)")
    return cc


def c_identifier(text: str) -> str:
    clean = re.sub(r"\W", "_", text)
    return clean if not clean[:1].isdigit() else f"_{clean}"


@dataclass
class Library:
    """What a library is built from, besides its kernels."""

    module: str                    # MODULE: the C identifier of the source's stem
    source: str                    # the source file's name
    target: targets.Target
    features: list[str] | None     # the CPU features runtime.load checks; None: unknown
    aotx_version: str


def write_library(out_dir: str | Path, lib: Library, kernels: list[BuiltKernel], cc: list[str],
                  emit: Sequence[str]) -> BuildResult:
    """Link `kernels` into out_dir/MODULE.so, write MODULE.h, the `emit` artifacts and
    MODULE.json (written last: a manifest means a complete library)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    so, header, manifest = (out / f"{lib.module}.{ext}" for ext in ("so", "h", "json"))
    body = _manifest(lib, kernels, so, header)
    _link(cc, kernels, so, manifest_sha256(body), lib.target)
    header_text = make_header(lib, kernels)
    _write_atomic(header, header_text.encode())
    extra = _emit(out, lib.module, kernels, emit)
    body["hashes"] = {so.name: sha256(so.read_bytes()), header.name: sha256(header_text.encode())}
    _write_atomic(manifest, (json.dumps(body, indent=1) + "\n").encode())
    return BuildResult(so, header, manifest, extra, [k.name for k in kernels])


def _manifest(lib: Library, kernels: list[BuiltKernel], so: Path, header: Path) -> dict[str, Any]:
    """The manifest without its "hashes" (added once the files exist)."""
    t = lib.target
    return {
        "format": FORMAT, "abi_version": ABI_VERSION, "aotx_version": lib.aotx_version,
        "module": lib.module, "source": lib.source,
        "library": so.name, "header": header.name,
        "target": {"triple": t.triple, "cpu": t.cpu, "features": lib.features or [],
                   "features_known": lib.features is not None, "feature_string": t.features},
        "kernels": [k.info for k in kernels],
    }


def _link(cc: list[str], kernels: list[BuiltKernel], lib: Path, table_sha256: str,
          target: targets.Target) -> None:
    """Link the objects into `lib`, with the manifest's hash as data in it (runtime.load
    finds it in the file's bytes, without running the library, and compares)."""
    with tempfile.TemporaryDirectory(prefix="aotx-build-") as tmp:
        objs = []
        for k in kernels:
            p = Path(tmp) / f"{k.symbol}.o"
            p.write_bytes(k.object)
            objs.append(str(p))
        if any(pool.uses_pool(k.object) for k in kernels):    # parallel=True: the library's pool
            p = Path(tmp) / "aotx_pool.o"
            p.write_bytes(pool.object_code(target))
            objs.append(str(p))
        stamp = Path(tmp) / "aotx_manifest.c"
        stamp.write_text(f"/* generated by aotx: the SHA-256 of the manifest's content (runtime/manifest.py) */\n"
                         f"__attribute__((used)) static const char aotx_manifest_sha256[] =\n"
                         f"    \"{EMBED_PREFIX.decode()}{table_sha256}\";\n")
        out_tmp = Path(tmp) / lib.name
        cmd = [*cc, "-shared", "-fPIC", "-o", str(out_tmp), *objs, str(stamp), "-lm", "-pthread"]
        if sys.platform.startswith("linux"):
            cmd.insert(-1, "-Wl,-z,noexecstack")
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BuildError(f"linking {lib.name} failed: {' '.join(cmd)}\n{proc.stderr.strip()}")
        _write_atomic(lib, out_tmp.read_bytes())


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _emit(out: Path, mod_name: str, kernels: list[BuiltKernel], emit: Sequence[str]) -> list[Path]:
    written = []
    for k in kernels:
        for kind, suffix, text in (("ll", "ll", k.llvm_optimized), ("asm", "s", k.asm),
                                   ("ir", "ir", k.ir_text)):
            if kind in emit:
                p = out / f"{mod_name}.{k.name}.{suffix}"
                _write_atomic(p, text.encode())
                written.append(p)
    return written


_C_TYPES = {"f32": "float", "f64": "double", "i32": "int32_t", "i64": "int64_t", "bool": "bool (1 byte)"}
_C_TYPES.update({"i8": "int8_t", "i16": "int16_t", "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t",
                 "u64": "uint64_t", "f16": "_Float16 (IEEE binary16, 2 bytes)",
                 "c64": "float _Complex", "c128": "double _Complex"})


def make_header(lib: Library, kernels: list[BuiltKernel]) -> str:
    """MODULE.h: the C declarations of the kernels, with their arguments in comments."""
    guard = f"AOTX_{lib.module.upper()}_H"
    lines = _header_preamble(lib, guard)
    for k in kernels:
        lines += _declaration(k)
    lines += ["#ifdef __cplusplus", "}", "#endif", "", f"#endif /* {guard} */", ""]
    return "\n".join(lines)


def _header_preamble(lib: Library, guard: str) -> list[str]:
    return [
        f"/* {lib.module}.h: kernels of {lib.source}, generated by aotx {lib.aotx_version}. Do not edit.",
        f" * Target: {lib.target.triple}, cpu {lib.target.cpu}. C ABI version {ABI_VERSION} (see docs/abi.md).",
        " *",
        " * Every kernel is   int32_t NAME(void *const *inputs, void *const *outputs,",
        " *                                const int64_t *symbols);",
        " * inputs/outputs: pointers to contiguous row-major (C order) buffers, allocated by",
        " * the caller, outputs sized from the symbols; symbols: the values of the symbolic",
        " * dims in the order listed. The kernel does not check shapes. Returns AOTX_OK (0),",
        " * AOTX_ERR_NOMEM if it could not allocate its temporaries, AOTX_ERR_TOO_BIG when an",
        " * array of the computation would not fit in int64_t bytes for these symbols, or",
        " * AOTX_ERR_CHECK + i if its i-th check failed (an IndexError or ValueError in NumPy:",
        " * the manifest's \"errors\").",
        " * A function that writes into its arguments (x += y, x[1:-1] = ...: NAME_NUM_UPDATES > 0)",
        " * returns their new values as its last outputs (the manifest's \"updates\"); the",
        " * caller copies each into its argument after a successful call, as runtime.load does.",
        " * An update written in place (the manifest's \"in_place\") is computed in the input's",
        " * own buffer: pass the input's pointer as that output too, and there is nothing to copy",
        " * (another output pointer gets a copy of the new value at the end of the call).",
        " * A kernel that may call BLAS/LAPACK (a large matrix product: NAME_NUM_ROUTINES > 0) has",
        " * a pointer per routine, NAME__ROUTINE (e.g. mod_f__dgemm), NULL until you set it to",
        " * an ILP64 (64-bit integer) Fortran-ABI routine, e.g. mod_f__dgemm = (void *)dgemm_64_;",
        " * while NULL the kernel computes with its own generated code (same results, slower).",
        " * A kernel with temporaries (NAME_WORKSPACE 1) keeps them in one block between calls, up",
        " * to a limit (64 MiB unless NAME__workspace_limit(bytes) says otherwise; 0 keeps",
        " * nothing); NAME__workspace_release() frees the kept block. Calls from several threads",
        " * are safe: each call owns its block while it runs (docs/performance.md).",
        " */",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
        "#include <stdint.h>",
        "",
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
        "",
        "#ifndef AOTX_ABI_VERSION",
        f"#define AOTX_ABI_VERSION {ABI_VERSION}",
        "#define AOTX_OK 0",
        "#define AOTX_ERR_NOMEM 1",
        "#define AOTX_ERR_CALLBACK 2",
        "#define AOTX_ERR_TOO_BIG 3",
        f"#define AOTX_ERR_CHECK {ERROR_BASE}",
        "#endif",
        "",
    ]


def _declaration(k: BuiltKernel) -> list[str]:
    info, upper = k.info, k.symbol.upper()
    lines = [f"/* {k.name}({info['signature']})"]
    for i, a in enumerate(info["inputs"]):
        lines.append(f" *   inputs[{i}]   {a['name']}: {_describe(a['type'])}")
    updates = info.get("updates", [])
    first = len(info["outputs"]) - len(updates)
    for i, a in enumerate(info["outputs"]):
        lines.append(f" *   outputs[{i}]  {a['name']}: {_describe(a['type'])}")
        if i >= first:
            j = updates[i - first]
            if j in info.get("in_place", []):
                lines.append(f" *                the new value of inputs[{j}] ({info['inputs'][j]['name']}), "
                             f"written where it lives: pass inputs[{j}] here too")
                continue
            lines.append(f" *                the new value of inputs[{j}] ({info['inputs'][j]['name']}), "
                         "which the function updates in place: copy it into that array after a "
                         "successful call")
    for i, s in enumerate(info["symbols"]):
        lines.append(f" *   symbols[{i}]  {s}")
    random = info.get("random", False)
    if random:
        lines.append(f" *   symbols[{len(info['symbols'])}]  the call's random key: a fresh int64 per call "
                     "(see docs/abi.md, Random keys)")
    elif not info["symbols"]:
        lines.append(" *   symbols: none (pass NULL)")
    return lines + [
        " */",
        f"int32_t {k.symbol}(void *const *inputs, void *const *outputs, const int64_t *symbols);",
        f"#define {upper}_NUM_INPUTS {len(info['inputs'])}",
        f"#define {upper}_NUM_OUTPUTS {len(info['outputs'])}",
        f"#define {upper}_NUM_SYMBOLS {len(info['symbols'])}",
        f"#define {upper}_RANDOM_KEY {int(bool(random))}",
        f"#define {upper}_NUM_UPDATES {len(updates)}",
        f"#define {upper}_NUM_ROUTINES {len(info.get('routines', []))}",
        *[f"extern void *{k.symbol}__{r};   /* ILP64 {r}_, NULL: generated code */"
          for r in info.get("routines", [])],
        f"#define {upper}_WORKSPACE {int(info.get('workspace', False) is True)}",
        *([f"void {k.symbol}__workspace_limit(int64_t bytes);   /* keep at most bytes between calls */",
           f"void {k.symbol}__workspace_release(void);          /* free the block kept between calls */"]
          if info.get("workspace", False) is True else []),
        "",
    ]


def _describe(type_text: str) -> str:
    spec = parse_spec("x", type_text)
    ctype = _C_TYPES[DTYPE_NAMES[spec.dtype]]
    if not spec.dims:
        return f"{ctype} scalar (pointer to one element)"
    return f"{ctype}[{']['.join(str(d) for d in spec.dims)}]"
