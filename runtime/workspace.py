"""The block of temporaries a kernel keeps between calls (compiler/backend/workspace.py).

A kernel with temporaries takes them from one block that it keeps after the call, so that
the next call does not allocate (and fault in) them again. It keeps a block of at most its
*limit* bytes (64 MiB unless told otherwise), and exports two functions that set the limit
and free the kept block. This module applies ``AOTX_WORKSPACE_LIMIT`` when a kernel is
loaded, by the JIT and by ``runtime.load`` alike, and frees the block of a JIT kernel before
its code is unloaded (docs/performance.md, "Temporaries").

``AOTX_WORKSPACE_LIMIT``: bytes, with an optional ``K``, ``M`` or ``G`` suffix (powers of
1024): ``0`` keeps nothing (every call allocates and frees its temporaries), ``1G`` keeps
blocks up to 1 GiB.
"""
from __future__ import annotations

import ctypes
import os
import re
from typing import Callable

_RELEASE = ctypes.CFUNCTYPE(None)
_SET_LIMIT = ctypes.CFUNCTYPE(None, ctypes.c_int64)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def release_symbol(kernel_symbol: str) -> str:
    """The exported ``void f(void)`` that frees the block kernel `kernel_symbol` keeps."""
    return f"{kernel_symbol}__workspace_release"


def limit_symbol(kernel_symbol: str) -> str:
    """The exported ``void f(int64_t bytes)`` that sets how many bytes the kernel keeps."""
    return f"{kernel_symbol}__workspace_limit"


def limit() -> int | None:
    """``AOTX_WORKSPACE_LIMIT`` in bytes, None when unset."""
    text = os.environ.get("AOTX_WORKSPACE_LIMIT", "").strip()
    if not text:
        return None
    m = re.fullmatch(r"(\d+)\s*([kKmMgG]?)(?:i?[bB])?", text)
    if m is None:
        raise ValueError(f"AOTX_WORKSPACE_LIMIT={text!r}: expected a byte count such as 0, "
                         "1048576, 64M or 1G")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


def configure(address: Callable[[str], int], kernel_symbol: str) -> Callable[[], None] | None:
    """Apply ``AOTX_WORKSPACE_LIMIT`` to a loaded kernel; `address(name)` is the address of
    an exported function (0 when absent). Returns the function that frees the kernel's kept
    block, None for a kernel without temporaries (or compiled before kernels kept them)."""
    release = address(release_symbol(kernel_symbol))
    if not release:
        return None
    bytes_ = limit()
    set_limit = address(limit_symbol(kernel_symbol))
    if bytes_ is not None and set_limit:
        _SET_LIMIT(set_limit)(min(bytes_, 2**62))
    return _RELEASE(release)
