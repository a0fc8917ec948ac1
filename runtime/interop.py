"""Arrays of other libraries as kernel inputs (docs/interop.md).

An argument that is not a NumPy array but exports its memory, through DLPack
(``__dlpack__``: PyTorch, JAX, CuPy on the CPU, ...) or ``__array__`` (the NumPy
protocol), becomes an ndarray over the same memory: DLPack first, ``np.asarray``
when the object has no DLPack or refuses it (a read-only buffer, an old DLPack). The
kernel then sees an ordinary array: no copy when its layout is one the kernel takes
(C-contiguous, of the kernel's dtype), else the copy NumPy would make; results are
NumPy arrays. An object that exports nothing usable (a tensor that requires grad, on
a GPU, of a dtype NumPy lacks) is a TypeError naming the argument and what to do.
"""
from __future__ import annotations

from typing import Any

import numpy as np


def is_foreign(value: Any) -> bool:
    """An array of another library: an object with ``__dlpack__`` or ``__array__`` that is
    not a NumPy array or scalar."""
    if isinstance(value, (np.ndarray, np.generic)):
        return False
    cls = type(value)
    return hasattr(cls, "__dlpack__") or hasattr(cls, "__array__")


def to_numpy(name: str, value: Any) -> np.ndarray:
    """`value` (see :func:`is_foreign`) as an ndarray sharing its memory where possible."""
    cls = type(value)
    problems = []
    if hasattr(cls, "__dlpack__"):
        try:
            return np.from_dlpack(value)
        except (BufferError, TypeError, ValueError, RuntimeError) as e:
            problems.append(f"DLPack: {e}")
    if hasattr(cls, "__array__"):
        try:
            return np.asarray(value)
        except (BufferError, TypeError, ValueError, RuntimeError) as e:
            problems.append(f"__array__: {e}")
    kind = f"{cls.__module__}.{cls.__qualname__}"
    hint = " (.detach() a tensor that requires grad, .cpu() one on a GPU, " \
           "convert a dtype NumPy lacks such as bfloat16 with .float())"
    raise TypeError(f"argument '{name}': cannot read {kind} as a NumPy array ({'; '.join(problems)}); "
                    f"pass an array NumPy can read{hint}")
