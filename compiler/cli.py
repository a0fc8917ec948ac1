"""The ``aotx`` command (also ``python -m compiler``).

    aotx build MODULE.py -o DIR [--cpu host|generic|NAME] [--emit ll,asm,ir] [--jobs N]
    aotx build --cpu help          (the CPU names LLVM knows)
    aotx show FILE.py:FUNC --signature "f64[n]" [--static NAME=VALUE ...] --stage ir|ir_optimized|llvm|asm
    aotx cache info|list|clear
"""
from __future__ import annotations

import argparse
import ast
import inspect
import sys
from pathlib import Path
from typing import Any, Sequence

from compiler import build as aot_build
from compiler import cache as kcache
from compiler.api import Kernel, Specialization
from compiler.errors import CompileError
from compiler.signature import parse_signature
from runtime import cache as storage

STAGES = ("ir", "ir_optimized", "llvm", "llvm_optimized", "asm")


def _load_function(spec: str) -> Any:
    path_text, sep, func_name = spec.rpartition(":")
    if not sep or not path_text:
        raise SystemExit(f"aotx: expected FILE.py:FUNC, got {spec!r}")
    path = Path(path_text)
    if not path.is_file():
        raise SystemExit(f"aotx: no such file: {path}")
    module = aot_build.import_module(path, defer=False)
    if not hasattr(module, func_name):
        raise SystemExit(f"aotx: {path} has no function {func_name!r}")
    return getattr(module, func_name)


def _show(args: argparse.Namespace) -> int:
    fn = _load_function(args.target)
    kernel = fn if isinstance(fn, Kernel) else Kernel(getattr(fn, "__wrapped__", fn))
    signature = args.signature or kernel.signature
    if signature is None:
        raise SystemExit("aotx: --signature is required (the function has none)")
    if args.static:
        lowered = Specialization(kernel, _with_static(kernel, signature, args.static), {}).lowered()
    else:
        lowered = kernel.lower(signature)
    print(getattr(lowered, args.stage))
    return 0


def _with_static(kernel: Kernel, signature: str, static: Sequence[str]) -> tuple:
    """The abstract arguments of `aotx show --static NAME=VALUE ...`: the static values at
    their parameters' positions, the signature's types for the other parameters (in order;
    a signature that lists every parameter has the static ones' types ignored)."""
    params = [p.name for p in inspect.signature(kernel.fn).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    values: dict[int, Any] = {}
    for item in static:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise SystemExit(f"aotx: --static expects NAME=VALUE (a parameter and a Python literal), "
                             f"got {item!r}")
        position = int(name) if name.isdigit() else params.index(name) if name in params else None
        if position is None or position >= len(params):
            raise SystemExit(f"aotx: --static {item}: {kernel.__name__} has no positional parameter "
                             f"{name!r} (its parameters: {', '.join(params)})")
        try:
            values[position] = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            raise SystemExit(f"aotx: --static {item}: {text.strip()!r} is not a Python literal "
                             f"(a number, a string, a tuple, True, None...)") from None
    types = list(parse_signature(signature)[0])
    if len(types) == len(params):
        types = [t for i, t in enumerate(types) if i not in values]
    if len(types) != len(params) - len(values):
        raise SystemExit(f"aotx: --signature {signature!r} has {len(types)} types for the "
                         f"{len(params) - len(values)} parameters of {kernel.__name__} that are "
                         f"not static")
    rest = iter(types)
    return tuple(values[i] if i in values else next(rest) for i in range(len(params)))


def _build(args: argparse.Namespace) -> int:
    if args.cpu == "help":
        names, _ = aot_build.known_cpus()
        print("host\ngeneric\n" + "\n".join(names))
        return 0
    emit = [e.strip() for part in args.emit for e in part.split(",") if e.strip()]
    result = aot_build.build(args.module, args.output, cpu=args.cpu, emit=emit, jobs=args.jobs)
    files = [result.library, result.header, result.manifest, *result.extra]
    print(f"aotx: built {len(result.kernels)} kernel(s): " + ", ".join(str(f) for f in files),
          file=sys.stderr)
    return 0


def _cache(args: argparse.Namespace) -> int:
    cache = storage.DiskCache(storage.default_dir())
    if args.action == "info":
        entries = list(cache.entries())
        bad = sum(1 for e in entries if e.meta is None)
        print(f"directory: {cache.root}")
        print(f"entries:   {len(entries)}" + (f" ({bad} invalid: rebuilt when used)" if bad else ""))
        print(f"size:      {cache.size() / 1024:.1f} KiB")
        print(f"enabled:   {'no (AOTX_DISABLE_CACHE is set)' if not kcache.enabled() else 'yes'}")
        return 0
    if args.action == "list":
        rows = []
        for e in cache.entries():
            if e.meta is None:
                rows.append((e.key[:12], "(invalid)", e.problem or "", f"{e.size / 1024:.1f} KiB",
                             storage.age(e.mtime)))
            else:
                m = e.meta
                rows.append((e.key[:12], m.get("function", m.get("name", "?")), m.get("signature", ""),
                             f"{e.size / 1024:.1f} KiB", storage.age(e.mtime)))
        if not rows:
            print(f"(no entries in {cache.root})")
            return 0
        header = ("key", "function", "signature", "size", "age")
        widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
        for r in [header, *rows]:
            print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
        return 0
    n = cache.clear()
    print(f"removed {n} entries from {cache.root}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="aotx", description="ahead-of-time NumPy kernel compiler")
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="compile a module's signed kernels to a C-ABI shared library")
    build.add_argument("module", nargs="?", help="MODULE.py")
    build.add_argument("-o", "--output", help="output directory (required)")
    build.add_argument("--cpu", default="host", help="host (default), generic, or an LLVM CPU name "
                       "(e.g. x86-64-v3, haswell, znver4; `--cpu help` lists them)")
    build.add_argument("--emit", action="append", default=[],
                       help="extra artifacts, comma separated: ll (LLVM IR), asm, ir (aotx IR)")
    build.add_argument("--jobs", "-j", type=_positive, default=1, help="compile N kernels in parallel")
    build.set_defaults(run=_build)
    cache = sub.add_parser("cache", help="inspect or clear the on-disk kernel cache")
    cache.add_argument("action", choices=("info", "list", "clear"))
    cache.set_defaults(run=_cache)
    show = sub.add_parser("show", help="print a stage of a compiled function")
    show.add_argument("target", help="FILE.py:FUNC")
    show.add_argument("--signature", help='argument types, e.g. "f64[n, 3], f64[3]"')
    show.add_argument("--static", action="append", default=[], metavar="NAME=VALUE",
                      help="a compile-time value for a parameter (repeatable), e.g. --static n=5; "
                      "--signature then gives the types of the other parameters")
    show.add_argument("--stage", choices=STAGES, default="ir_optimized")
    show.set_defaults(run=_show)
    args = parser.parse_args(argv)
    if args.command == "build" and args.cpu != "help" and (args.module is None or args.output is None):
        build.error("the following arguments are required: " + ", ".join(
            n for n, v in (("module", args.module), ("-o/--output", args.output)) if v is None))
    try:
        return int(args.run(args))
    except CompileError as e:
        print(e, file=sys.stderr)
        if args.command == "show" and "static_argnums" in str(e):
            print("aotx: --static NAME=VALUE gives a parameter a compile-time value", file=sys.stderr)
        return 1
    except aot_build.BuildError as e:
        print(f"aotx: {e}", file=sys.stderr)
        return 1


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of worker processes, got {text!r}")
    return value


if __name__ == "__main__":
    raise SystemExit(main())
