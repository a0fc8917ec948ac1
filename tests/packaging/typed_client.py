"""A user's program written against the public API with full type hints.

`tests/packaging/test_typing.py` checks it with `mypy --strict` (against the
source tree, and against an installed wheel's `py.typed` packages); the wheel's
smoke test runs it in a fresh virtual environment:

    python typed_client.py [BUILT_LIBRARY]

It compiles a kernel with `jit`, transforms it, and, given the base path of a
library built by `aotx build` from LIBRARY_SOURCE below, loads it with
`runtime.load`. Every check compares with NumPy; it prints "ok" at the end.
"""
from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np
import numpy.typing as npt

import compiler
import runtime
from compiler import (Function, Kernel, cond, diagnostics, errors, fori_loop, grad, grad_and_value,
                      hessian, jacfwd, jacrev, jit, jvp, linearize, random, scan, switch, vjp, vmap,
                      while_loop)

F64 = npt.NDArray[np.float64]

#: the module the smoke test builds with `aotx build` and loads with `runtime.load`
LIBRARY_SOURCE = '''
import numpy as np
from compiler import jit


@jit(signature="f64[n]")
def softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0.0)
'''


def energy(x: F64) -> Any:
    return (np.sin(x) * x).sum()


def softplus(x: F64) -> Any:
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0.0)


def compiled() -> Kernel:
    return jit(energy)                                   # a Kernel, not Any


def decorated() -> Kernel:
    make: Callable[[Callable[..., Any]], Kernel] = jit(signature="f64[n]", fastmath=False)
    return make(softplus)


def transforms() -> list[Kernel]:
    """Each transform is a Kernel (type-checked only: each would compile on its first call)."""
    return [vmap(energy), grad(energy), grad_and_value(energy), jacrev(softplus), jacfwd(softplus),
            hessian(energy)]


def control(x: F64) -> tuple[Any, ...]:
    """The control-flow entry points (type-checked only)."""
    total = fori_loop(0, 3, lambda i, acc: acc + x, np.zeros_like(x))
    carry, ys = scan(lambda c, v: (c + v, c), 0.0, x)
    picked = cond(bool(x[0] > 0), lambda v: v, lambda v: -v, x)
    which = switch(1, [lambda v: v, lambda v: 2 * v], x)
    looped = while_loop(lambda c: c < 10.0, lambda c: c + 1.0, 0.0)
    out, pullback = vjp(energy, x)
    primal, tangent = jvp(energy, (x,), (np.ones_like(x),))
    value, push = linearize(energy, x)
    return total, carry, ys, picked, which, looped, out, pullback, primal, tangent, value, push


def surface() -> tuple[Any, ...]:
    """The rest of the public names (type-checked only)."""
    random.seed(0)
    k1, k2 = random.split(random.key(0))
    draws = random.normal(k1, (3,))
    err: type[Exception] = errors.CompileError
    custom: type[Function] = Function
    info: dict[str, Any] = diagnostics()
    lib_type: type[runtime.Library] = runtime.Library
    load_err: type[Exception] = runtime.LoadError
    cpu_err: type[Exception] = runtime.CPUFeatureError
    abi: int = runtime.ABI_VERSION
    return k2, draws, err, custom, info, lib_type, load_err, cpu_err, abi


def check_jit() -> None:
    x = np.linspace(-3.0, 3.0, 101)
    got: Any = compiled()(x)
    assert np.isclose(got, energy(x), rtol=1e-12), (got, energy(x))
    np.testing.assert_allclose(decorated()(x), np.logaddexp(0.0, x), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(grad(energy)(x), np.sin(x) + x * np.cos(x), rtol=1e-12, atol=1e-15)
    rows = np.stack([x, 2.0 * x])
    np.testing.assert_allclose(vmap(energy)(rows), [energy(x), energy(2.0 * x)], rtol=1e-12)


def check_library(base: str) -> None:
    lib: runtime.Library = runtime.load(base)
    x = np.linspace(-30.0, 30.0, 1001)
    np.testing.assert_allclose(lib.softplus(x), np.logaddexp(0.0, x), rtol=1e-13, atol=1e-15)
    assert list(lib.kernels) == ["softplus"]


def main(argv: list[str]) -> None:
    assert compiler.__version__ == runtime.__version__
    check_jit()
    if len(argv) > 1:
        check_library(argv[1])
    print("ok", compiler.__version__)


if __name__ == "__main__":
    main(sys.argv)
