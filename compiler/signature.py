"""Signature strings: ``"f64[n, 3], f64[3] -> f64[n]"`` <-> IR types."""
from __future__ import annotations

from compiler.ir.types import TensorType, parse_type, split_types


def parse_signature(text: str) -> tuple[list[TensorType], list[TensorType] | None]:
    """Argument types and (if given after '->') result types."""
    args_text, arrow, result_text = text.partition("->")
    try:
        args = [parse_type(t) for t in split_types(args_text)]
        results = [parse_type(t) for t in split_types(result_text.strip().strip("()"))] if arrow else None
    except ValueError as e:
        raise ValueError(f"invalid signature {text!r}: {e}") from None
    return args, results


def format_signature(args: list[TensorType], results: list[TensorType] | None = None) -> str:
    text = ", ".join(str(t) for t in args)
    return text + (" -> " + ", ".join(str(t) for t in results) if results is not None else "")
