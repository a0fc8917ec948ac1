"""The ``aotx`` command (also ``python -m compiler``).

    aotx show FILE.py:FUNC --signature "f64[n]" --stage ir|ir_optimized|llvm|asm
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import Any, Sequence

from compiler.errors import CompileError

STAGES = ("ir", "ir_optimized", "llvm", "llvm_optimized", "asm")


def _load_function(spec: str) -> Any:
    path_text, sep, func_name = spec.rpartition(":")
    if not sep or not path_text:
        raise SystemExit(f"aotx: expected FILE.py:FUNC, got {spec!r}")
    path = Path(path_text)
    if not path.is_file():
        raise SystemExit(f"aotx: no such file: {path}")
    module_spec = importlib.util.spec_from_file_location(path.stem, path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[path.stem] = module
    module_spec.loader.exec_module(module)
    if not hasattr(module, func_name):
        raise SystemExit(f"aotx: {path} has no function {func_name!r}")
    return getattr(module, func_name)


def _show(args: argparse.Namespace) -> int:
    from compiler.api import Kernel
    fn = _load_function(args.target)
    kernel = fn if isinstance(fn, Kernel) else Kernel(getattr(fn, "__wrapped__", fn))
    signature = args.signature or kernel.signature
    if signature is None:
        raise SystemExit("aotx: --signature is required (the function has none)")
    lowered = kernel.lower(signature)
    print(getattr(lowered, args.stage))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="aotx", description="ahead-of-time NumPy kernel compiler")
    sub = parser.add_subparsers(dest="command", required=True)
    show = sub.add_parser("show", help="print a stage of a compiled function")
    show.add_argument("target", help="FILE.py:FUNC")
    show.add_argument("--signature", help='argument types, e.g. "f64[n, 3], f64[3]"')
    show.add_argument("--stage", choices=STAGES, default="ir_optimized")
    show.set_defaults(run=_show)
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except CompileError as e:
        print(e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
