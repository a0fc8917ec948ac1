"""Ahead-of-time build: a Python module's signed kernels -> MODULE.so + .h + .json.

``aotx build physics.py -o build/`` imports the module with compilation
deferred (so ``@jit(signature=...)`` only stages), then for every Kernel of the
module that carries a signature: simplify, generate LLVM IR for the chosen
target with the exported symbol ``physics_NAME``, and run LLVM (O3 +
vectorization + object emission), in parallel worker processes with
``--jobs``. The objects are linked by the system C compiler into one shared
library; the header declares each entry point (docs/abi.md) and the manifest
records what ``runtime.load`` checks (runtime/manifest.py).
"""
from __future__ import annotations

import concurrent.futures
import importlib.util
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from compiler import cache as kcache
from compiler import pipeline
from compiler.backend import kernel as kernel_module
from compiler.backend import target as targets
from compiler.ir.printer import format_function
from runtime import cpu as runtime_cpu
from runtime.abi import ABI_VERSION, DTYPE_NAMES, parse_spec
from runtime.cache import sha256
from runtime.manifest import FORMAT

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


# ---- the build ---------------------------------------------------------------------------------

@dataclass
class KernelJob:
    name: str                      # attribute of the module = Python name in runtime.load
    symbol: str                    # exported C symbol
    kernel: Any
    llvm_ir: str = ""
    ir_text: str = ""
    info: dict[str, Any] = field(default_factory=dict)
    object: bytes = b""
    llvm_optimized: str = ""
    asm: str = ""


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


def import_module(path: Path) -> Any:
    """Execute the module file with kernel compilation deferred (signatures are staged only)."""
    name = path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise BuildError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    with kcache.deferred():
        spec.loader.exec_module(module)
    return module


def signed_kernels(module: Any) -> list[tuple[str, Any]]:
    from compiler.api import Kernel
    seen: set[int] = set()
    out = []
    for attr, value in vars(module).items():
        if isinstance(value, Kernel) and value.signature is not None and value._fixed is not None \
                and value.__module__ == module.__name__ and id(value) not in seen:
            seen.add(id(value))
            out.append((attr, value))
    return out


def c_identifier(text: str) -> str:
    clean = re.sub(r"\W", "_", text)
    return clean if not clean[:1].isdigit() else f"_{clean}"


def build(source: str | Path, out_dir: str | Path, *, cpu: str = "host", emit: Sequence[str] = (),
          jobs: int = 1, progress: Callable[[str], None] | None = None) -> BuildResult:
    """Build `source` (a .py file) into out_dir/MODULE.{so,h,json} (+ emitted artifacts)."""
    say = progress or (lambda line: print(line, file=sys.stderr))
    source = Path(source)
    if not source.is_file():
        raise BuildError(f"no such file: {source}")
    bad = [e for e in emit if e not in EMIT_KINDS]
    if bad:
        raise BuildError(f"--emit: unknown artifact {bad[0]!r} (choose from {', '.join(EMIT_KINDS)})")
    cc = find_cc()
    target = targets.named(cpu)
    features = required_features(target)
    if features is None:
        say(f"aotx: warning: the CPU features of {cpu!r} are not known to aotx; "
            f"runtime.load will not check them")
    module = import_module(source)
    mod_name = c_identifier(source.stem)
    found = signed_kernels(module)
    if not found:
        raise BuildError(f"{source}: no function carries a signature "
                         f"(decorate functions with @jit(signature=\"...\"))")
    jobs_list = [KernelJob(name, f"{mod_name}_{c_identifier(name)}", k) for name, k in found]
    for job in jobs_list:
        _prepare(job, target, want_ir="ir" in emit)
    _run_llvm(jobs_list, target, want_asm="asm" in emit, jobs=max(1, jobs), say=say)

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lib = out / f"{mod_name}.so"
    header = out / f"{mod_name}.h"
    manifest_path = out / f"{mod_name}.json"
    _link(cc, jobs_list, lib)
    header_text = make_header(mod_name, source.name, jobs_list, target)
    _write_atomic(header, header_text.encode())
    extra = _emit(out, mod_name, jobs_list, emit)
    import compiler
    manifest = {
        "format": FORMAT, "abi_version": ABI_VERSION, "aotx_version": compiler.__version__,
        "module": mod_name, "source": source.name,
        "library": lib.name, "header": header.name,
        "target": {"triple": target.triple, "cpu": target.cpu, "features": features or [],
                   "features_known": features is not None, "feature_string": target.features},
        "kernels": [job.info for job in jobs_list],
        "hashes": {lib.name: sha256(lib.read_bytes()), header.name: sha256(header_text.encode())},
    }
    _write_atomic(manifest_path, (json.dumps(manifest, indent=1) + "\n").encode())
    return BuildResult(lib, header, manifest_path, extra, [j.name for j in jobs_list])


def _prepare(job: KernelJob, target: targets.Target, want_ir: bool) -> None:
    """Frontend output -> simplified IR -> LLVM IR for `target` (in this process)."""
    from compiler.backend.callbacks import check_buildable
    spec = job.kernel._fixed
    fn = spec.program.function
    check_buildable(fn, job.name)
    optimized = pipeline.optimize_ir(fn)
    job.llvm_ir = kernel_module.build_module(optimized, job.symbol, target, fastmath=job.kernel.fastmath)
    if want_ir:
        job.ir_text = format_function(optimized)
    names = fn.arg_names or [f"arg{i}" for i in range(len(fn.in_types))]
    ins = [parse_spec(n, str(t)).to_json() for n, t in zip(names, fn.in_types)]
    outs = [parse_spec(f"result{i}", str(t)).to_json() for i, t in enumerate(optimized.out_types)]
    try:
        result = kcache.tree_to_json(spec.program.out_tree, allow_namedtuple=True)
    except kcache.Uncacheable as e:
        raise BuildError(f"{job.name}: the result cannot be described for the manifest ({e})") from None
    try:
        source_hash = kcache.digest([kcache.Describer()(job.kernel), job.kernel.signature])
    except kcache.Uncacheable:
        source_hash = None
    job.info = {"name": job.name, "symbol": job.symbol, "inputs": ins, "outputs": outs,
                "symbols": kernel_module.symbols_of(optimized), "result": result,
                "signature": ", ".join(a["type"] for a in ins) + " -> " + ", ".join(a["type"] for a in outs),
                "source_sha256": source_hash}


def llvm_job(llvm_ir: str, triple: str, cpu: str, features: str, want_asm: bool) -> tuple[bytes, str, str, float]:
    """Parse, optimize (O3 + vectorize) and emit one module; runs in a worker process."""
    from compiler.backend import passes
    start = time.perf_counter()
    target = targets.Target(triple, cpu, features)
    module = passes.parse(llvm_ir, target)
    passes.optimize(module, target)
    obj = passes.emit_object(module, target)
    asm = passes.emit_assembly(module, target) if want_asm else ""
    return obj, str(module), asm, time.perf_counter() - start


def _run_llvm(jobs_list: list[KernelJob], target: targets.Target, *, want_asm: bool, jobs: int,
              say: Callable[[str], None]) -> None:
    total = len(jobs_list)
    done = 0

    def finish(job: KernelJob, result: tuple[bytes, str, str, float]) -> None:
        nonlocal done
        job.object, job.llvm_optimized, job.asm, seconds = result
        job.info["object_sha256"] = sha256(job.object)
        pipeline.STATS["llvm_compilations"] += 1
        done += 1
        say(f"[{done}/{total}] {job.name}: {job.info['signature']}  ({1e3 * seconds:.0f} ms)")

    args = [(j.llvm_ir, target.triple, target.cpu, target.features, want_asm) for j in jobs_list]
    if jobs == 1 or total == 1:
        for job, a in zip(jobs_list, args):
            finish(job, llvm_job(*a))
        return
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    ctx = multiprocessing.get_context(method)
    with concurrent.futures.ProcessPoolExecutor(max_workers=min(jobs, total), mp_context=ctx) as pool:
        futures = {pool.submit(llvm_job, *a): job for job, a in zip(jobs_list, args)}
        for fut in concurrent.futures.as_completed(futures):
            finish(futures[fut], fut.result())


def _link(cc: list[str], jobs_list: list[KernelJob], lib: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="aotx-build-") as tmp:
        objs = []
        for job in jobs_list:
            p = Path(tmp) / f"{job.symbol}.o"
            p.write_bytes(job.object)
            objs.append(str(p))
        out_tmp = Path(tmp) / lib.name
        cmd = [*cc, "-shared", "-o", str(out_tmp), *objs, "-lm"]
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


def _emit(out: Path, mod_name: str, jobs_list: list[KernelJob], emit: Sequence[str]) -> list[Path]:
    written = []
    for job in jobs_list:
        for kind, suffix, text in (("ll", "ll", job.llvm_optimized), ("asm", "s", job.asm),
                                   ("ir", "ir", job.ir_text)):
            if kind in emit:
                p = out / f"{mod_name}.{job.name}.{suffix}"
                _write_atomic(p, text.encode())
                written.append(p)
    return written


_C_TYPES = {"f32": "float", "f64": "double", "i32": "int32_t", "i64": "int64_t", "bool": "bool (1 byte)"}


def make_header(mod_name: str, source: str, jobs_list: list[KernelJob], target: targets.Target) -> str:
    import compiler
    guard = f"AOTX_{mod_name.upper()}_H"
    lines = [
        f"/* {mod_name}.h: kernels of {source}, generated by aotx {compiler.__version__}. Do not edit.",
        f" * Target: {target.triple}, cpu {target.cpu}. C ABI version {ABI_VERSION} (see docs/abi.md).",
        " *",
        " * Every kernel is   int32_t NAME(void *const *inputs, void *const *outputs,",
        " *                                const int64_t *symbols);",
        " * inputs/outputs: pointers to contiguous row-major (C order) buffers, allocated by",
        " * the caller, outputs sized from the symbols; symbols: the values of the symbolic",
        " * dims in the order listed. The kernel does not check shapes. Returns AOTX_OK (0),",
        " * or AOTX_ERR_NOMEM if it could not allocate its temporaries.",
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
        "#endif",
        "",
    ]
    for job in jobs_list:
        info = job.info
        upper = job.symbol.upper()
        lines.append(f"/* {job.name}({info['signature']})")
        for i, a in enumerate(info["inputs"]):
            lines.append(f" *   inputs[{i}]   {a['name']}: {_describe(a['type'])}")
        for i, a in enumerate(info["outputs"]):
            lines.append(f" *   outputs[{i}]  {a['name']}: {_describe(a['type'])}")
        for i, s in enumerate(info["symbols"]):
            lines.append(f" *   symbols[{i}]  {s}")
        if not info["symbols"]:
            lines.append(" *   symbols: none (pass NULL)")
        lines.append(" */")
        lines.append(f"int32_t {job.symbol}(void *const *inputs, void *const *outputs, const int64_t *symbols);")
        lines.append(f"#define {upper}_NUM_INPUTS {len(info['inputs'])}")
        lines.append(f"#define {upper}_NUM_OUTPUTS {len(info['outputs'])}")
        lines.append(f"#define {upper}_NUM_SYMBOLS {len(info['symbols'])}")
        lines.append("")
    lines += ["#ifdef __cplusplus", "}", "#endif", "", f"#endif /* {guard} */", ""]
    return "\n".join(lines)


def _describe(type_text: str) -> str:
    spec = parse_spec("x", type_text)
    ctype = _C_TYPES[DTYPE_NAMES[spec.dtype]]
    if not spec.dims:
        return f"{ctype} scalar (pointer to one element)"
    return f"{ctype}[{']['.join(str(d) for d in spec.dims)}]"
