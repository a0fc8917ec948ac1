"""Sizes that come from arguments: the hint that names ``static_argnums``.

``np.linspace(a, b, n)``, ``np.zeros(n)``, ``np.arange(n)`` or ``x.reshape(n, -1)``
need `n` at compile time. A Python int argument is static under ``jit`` (its value
is baked in), but the same `n` is a run-time value when it comes as a NumPy
integer or a 0-d array, as a Python float, or through a ``signature=`` (``i64``).
The rejection is then raised where the size is needed, far from the argument; when
the rejected expression reads a 0-d argument of the function being compiled,
:func:`hint` adds which argument it is and how to make it static::

    hint: pass num as a Python int; `n` (argument 2 of lin) is a run-time value here: pass
    static_argnums=(2,) to jit so that `n` is a compile-time value (a Python int argument
    is one already; a signature= makes every argument a run-time value)
"""
from __future__ import annotations

import ast
import re
from typing import Any

from compiler.errors import DynamicShapeError, UnsupportedError
from compiler.frontend.values import Reject, Staged

# the wording of the rejections of a size, an axis, a trip count or a bound that must be
# known at compile time (shapes.py, indexing.py, loops), as opposed to shapes that depend
# on the data (a boolean mask, np.nonzero), which no static argument fixes
_NEEDS_STATIC = re.compile(r"static|known at compile time|run-time bounds|array-valued bounds|"
                           r"repeat counts that are array values")


def hint(stager: Any, node: ast.AST, reject: Reject) -> str | None:
    """`reject`'s hint, naming the arguments a static value would fix (see module docstring)."""
    if reject.cls not in (DynamicShapeError, UnsupportedError) or not _NEEDS_STATIC.search(reject.message):
        return reject.hint
    bounds = "bounds" in reject.message          # np.arange(a, b): float bounds are sizes too
    arguments: dict[int, tuple[int, str, str]] = getattr(stager, "scalar_arguments", {})
    found: dict[int, str] = {}
    function = ""
    for sub in ast.walk(node):
        if not isinstance(sub, ast.Name):
            continue
        try:
            value = stager.scope.lookup(sub.id)
        except Reject:
            continue
        if isinstance(value, Staged) and id(value) in arguments and \
                (value.dtype.kind in "iu" or (bounds and value.dtype.kind == "f")):
            position, name, function = arguments[id(value)]
            found[position] = name
    if not found:
        return reject.hint
    order = sorted(found)
    nums = ", ".join(str(p) for p in order) + ("," if len(order) == 1 else "")
    names = " and ".join(f"`{found[p]}`" for p in order)
    if len(order) == 1:
        what = (f"{names} (argument {order[0]} of {function}) is a run-time value here: pass "
                f"static_argnums=({nums}) to jit so that {names} is a compile-time value")
    else:
        what = (f"{names} (arguments {nums} of {function}) are run-time values here: pass "
                f"static_argnums=({nums}) to jit so that they are compile-time values")
    extra = (f"{what} (a Python int argument is one already; a signature= makes every argument "
             f"a run-time value)")
    return f"{reject.hint}; {extra}" if reject.hint else extra


def record_arguments(stager: Any, args: list[Any], names: list[str], function: str) -> None:
    """Remember the 0-d positional arguments of the function being staged, by position."""
    stager.scalar_arguments = {id(a): (i, n, function) for i, (a, n) in enumerate(zip(args, names))
                        if isinstance(a, Staged) and a.ndim == 0}
