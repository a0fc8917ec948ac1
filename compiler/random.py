"""``compiler.random``: stateless random numbers for compiled code (docs/random.md).

Every draw takes an optional key first, as JAX does, then the arguments of the
distribution; without a key it draws from the process's state, which
``seed(n)`` resets and which each call of a kernel advances:

    import numpy as np
    import compiler
    from compiler import random

    @compiler.jit
    def noisy(x):
        return x + 0.1 * random.normal(x.shape)          # new numbers on every call

    @compiler.jit
    def noisy_with(key, x):
        return x + 0.1 * random.normal(key, x.shape)     # a pure function of key and x

    random.seed(0)                                       # reproducible from here on
    a = noisy(np.zeros(3))
    k1, k2 = random.split(random.key(0))
    b = noisy_with(k1, np.zeros(3))

A key is an int64 scalar (``key(n)``, ``split``, ``fold_in`` make them); the first
argument of a draw is a key when it is an int64 scalar, and otherwise the shape (a
Python int or tuple). Outside compiled code the same calls run as small compiled
kernels and return NumPy arrays.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np

from compiler.api import jit
from compiler.errors import CompileError, UnsupportedError
from compiler.frontend import random as FR
from compiler.frontend.calls import register_function
from compiler.frontend.values import Reject, Staged
from runtime import rng

__all__ = ["seed", "key", "split", "fold_in", "normal", "uniform", "bernoulli", "randint",
           "exponential", "gamma", "categorical", "permutation", "shuffle", "choice"]


def seed(n: int) -> None:
    """Seed the draws without a key: the kernels called after it draw the same numbers in every
    process that makes the same calls in the same order (also ``runtime.seed``)."""
    rng.seed(n)


def key(n: int) -> np.int64:
    """The key of the integer `n` (n modulo 2**64, as an int64)."""
    return rng.key(n)


def split(key: Any, num: int = 2) -> np.ndarray:
    """`num` independent keys from `key` (an int64[num] array)."""
    if FR.is_key(key):
        return rng.split(np.int64(key), int(num))
    raise TypeError(f"split: expected a key (an int64 scalar from compiler.random.key), got {key!r}")


def fold_in(key: Any, data: Any) -> np.int64:
    """A new key from `key` and the integer `data` (e.g. a step or a batch index)."""
    if FR.is_key(key):
        return np.int64(rng.fold_in(np.int64(key), int(data)))
    raise TypeError(f"fold_in: expected a key (an int64 scalar from compiler.random.key), got {key!r}")


# ---- the draws: one signature each, after the optional key -------------------------------------

def _normal(shape: Any = (), dtype: Any = np.float64) -> Any: ...
def _uniform(shape: Any = (), dtype: Any = np.float64, low: Any = 0.0, high: Any = 1.0) -> Any: ...
def _bernoulli(p: Any = 0.5, shape: Any = None) -> Any: ...
def _randint(shape: Any, low: Any, high: Any, dtype: Any = np.int64) -> Any: ...
def _exponential(shape: Any = (), dtype: Any = np.float64) -> Any: ...
def _gamma(a: Any, shape: Any = None, dtype: Any = np.float64) -> Any: ...
def _categorical(logits: Any, axis: int = -1) -> Any: ...
def _permutation(x: Any) -> Any: ...
def _choice(a: Any, shape: Any = (), replace: bool = True, p: Any = None) -> Any: ...


_STAGERS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "normal": (_normal, lambda st, k, a: FR.normal(st, k, a["shape"], a["dtype"])),
    "uniform": (_uniform, lambda st, k, a: FR.uniform(st, k, a["shape"], a["dtype"], a["low"], a["high"])),
    "bernoulli": (_bernoulli, lambda st, k, a: FR.bernoulli(st, k, a["p"], a["shape"])),
    "randint": (_randint, lambda st, k, a: FR.randint(st, k, a["shape"], a["low"], a["high"], a["dtype"])),
    "exponential": (_exponential, lambda st, k, a: FR.exponential(st, k, a["shape"], a["dtype"])),
    "gamma": (_gamma, lambda st, k, a: FR.gamma(st, k, a["a"], a["shape"], a["dtype"])),
    "categorical": (_categorical, lambda st, k, a: FR.categorical(st, k, a["logits"], a["axis"])),
    "permutation": (_permutation, lambda st, k, a: FR.permutation(st, k, a["x"])),
    "shuffle": (_permutation, lambda st, k, a: FR.permutation(st, k, a["x"])),
    "choice": (_choice, lambda st, k, a: FR.choice(st, k, a["a"], a["shape"], a["replace"], a["p"])),
}


def _bind(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """(key or None, the distribution's arguments by name)."""
    key_ = kwargs.pop("key", None)
    if key_ is None and args and FR.is_key(args[0]):
        key_, args = args[0], args[1:]
    template = _STAGERS[name][0]
    if key_ is None and len(args) >= 2 and isinstance(args[0], int) and not isinstance(args[0], bool) \
            and isinstance(args[1], (tuple, list)) and name not in ("randint", "choice"):
        raise TypeError(f"compiler.random.{name}(): the first argument {args[0]!r} is a Python int, "
                        f"which is a shape, not a key; make a key with compiler.random.key"
                        f"({args[0]!r}) (an int64 scalar)")
    try:
        bound = inspect.signature(template).bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"compiler.random.{name}(): {e}") from None
    bound.apply_defaults()
    return key_, dict(bound.arguments)


def _staging_handler(name: str) -> Callable[..., Any]:
    def handler(st: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            key_, arguments = _bind(name, args, dict(kwargs))
        except TypeError as e:
            raise Reject(CompileError, str(e)) from None
        return _STAGERS[name][1](st, key_, arguments)
    return handler


_EAGER: dict[str, Any] = {}


def _eager(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A draw outside compiled code: the same draw, compiled (once per static arguments)."""
    _bind(name, args, dict(kwargs))          # argument errors at the caller's line
    kernel = _EAGER.get(name)
    if kernel is None:
        kernel = _EAGER[name] = jit(_EAGER_FUNCTIONS[name])
    return kernel(*args, **kwargs)


def normal(*args: Any, **kwargs: Any) -> Any:
    """``normal([key,] shape=(), dtype=np.float64)``: standard normal draws."""
    return _eager("normal", args, kwargs)


def uniform(*args: Any, **kwargs: Any) -> Any:
    """``uniform([key,] shape=(), dtype=np.float64, low=0.0, high=1.0)``: uniform on [low, high)."""
    return _eager("uniform", args, kwargs)


def bernoulli(*args: Any, **kwargs: Any) -> Any:
    """``bernoulli([key,] p=0.5, shape=None)``: True with probability p (bool array)."""
    return _eager("bernoulli", args, kwargs)


def randint(*args: Any, **kwargs: Any) -> Any:
    """``randint([key,] shape, low, high, dtype=np.int64)``: integers in [low, high)."""
    return _eager("randint", args, kwargs)


def exponential(*args: Any, **kwargs: Any) -> Any:
    """``exponential([key,] shape=(), dtype=np.float64)``: rate-1 exponential draws."""
    return _eager("exponential", args, kwargs)


def gamma(*args: Any, **kwargs: Any) -> Any:
    """``gamma([key,] a, shape=None, dtype=np.float64)``: Gamma(a, 1) draws; `a` an array or
    a number (shape None: a's shape)."""
    return _eager("gamma", args, kwargs)


def categorical(*args: Any, **kwargs: Any) -> Any:
    """``categorical([key,] logits, axis=-1)``: an index along `axis` drawn with probabilities
    softmax(logits) (int64; one draw per distribution)."""
    return _eager("categorical", args, kwargs)


def permutation(*args: Any, **kwargs: Any) -> Any:
    """``permutation([key,] x)``: a random permutation of range(x) for an int x, else of the
    rows of the array x (its length known at compile time)."""
    return _eager("permutation", args, kwargs)


def shuffle(*args: Any, **kwargs: Any) -> Any:
    """``shuffle([key,] x)``: the rows of x in a random order (a new array, as permutation)."""
    return _eager("shuffle", args, kwargs)


def choice(*args: Any, **kwargs: Any) -> Any:
    """``choice([key,] a, shape=(), replace=True)``: elements of range(a) (int a) or rows of the
    array a; without replacement a sample of distinct ones."""
    return _eager("choice", args, kwargs)


def _run_normal(*args: Any, **kwargs: Any) -> Any:
    return normal(*args, **kwargs)


def _run_uniform(*args: Any, **kwargs: Any) -> Any:
    return uniform(*args, **kwargs)


def _run_bernoulli(*args: Any, **kwargs: Any) -> Any:
    return bernoulli(*args, **kwargs)


def _run_randint(*args: Any, **kwargs: Any) -> Any:
    return randint(*args, **kwargs)


def _run_exponential(*args: Any, **kwargs: Any) -> Any:
    return exponential(*args, **kwargs)


def _run_gamma(*args: Any, **kwargs: Any) -> Any:
    return gamma(*args, **kwargs)


def _run_categorical(*args: Any, **kwargs: Any) -> Any:
    return categorical(*args, **kwargs)


def _run_permutation(*args: Any, **kwargs: Any) -> Any:
    return permutation(*args, **kwargs)


def _run_shuffle(*args: Any, **kwargs: Any) -> Any:
    return shuffle(*args, **kwargs)


def _run_choice(*args: Any, **kwargs: Any) -> Any:
    return choice(*args, **kwargs)


_EAGER_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "normal": _run_normal, "uniform": _run_uniform, "bernoulli": _run_bernoulli,
    "randint": _run_randint, "exponential": _run_exponential, "gamma": _run_gamma,
    "categorical": _run_categorical, "permutation": _run_permutation, "shuffle": _run_shuffle,
    "choice": _run_choice,
}


def _stage_split(st: Any, key_: Any, num: int = 2) -> Any:
    return FR.split(st, key_, num)


def _stage_fold_in(st: Any, key_: Any, data: Any) -> Any:
    return FR.fold_in(st, key_, data)


def _stage_key(st: Any, n: Any) -> Any:
    if isinstance(n, Staged):      # a run-time integer: its bits are the key
        return FR.as_key(st, n)
    return rng.key(int(n))


def _stage_seed(st: Any, n: Any) -> Any:
    raise Reject(UnsupportedError, "compiler.random.seed() inside compiled code",
                    "call it before calling the kernel (it sets the state of the process)")


for _name in _STAGERS:
    register_function(globals()[_name], _staging_handler(_name))
register_function(split, _stage_split)
register_function(fold_in, _stage_fold_in)
register_function(key, _stage_key)
register_function(seed, _stage_seed)
