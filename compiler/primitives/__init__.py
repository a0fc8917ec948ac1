"""Every primitive: declared with its typed constructor in ops.py, defined (shape rule,
NumPy reference, lowering, transform rules) in one family module.

Importing this package defines all families; ``REGISTRY`` maps names to entries and
the module attributes give direct handles (``prims.add``). ``compiler.Function``'s
primitives (compiler/function/) register themselves from above.
"""
from compiler.ir.primitive import REGISTRY, Primitive, undefined
from compiler.primitives.base import ShapeError
from compiler.primitives.checks import check_
from compiler.primitives.complex_ops import complex_, conj, imag, real
from compiler.primitives.control import chunked, cond, while_
from compiler.primitives.loops import for_
from compiler.primitives.elementwise import *  # noqa: F401,F403
from compiler.primitives import eig as _eig  # noqa: F401  (defines eig; the module keeps its name)
from compiler.primitives.elementwise import (abs_, add, and_, arccos, arccosh, arcsin, arcsinh, arctan,
                                             arctan2, arctanh, cbrt,
                                             ceil, convert, cos, cosh, div, eq, exp, exp2, expm1,
                                             floor, floordiv, ge, gt, hypot, isfinite, isinf, isnan,
                                             le, log, log1p, log2, log10, lt, maximum, minimum, mod,
                                             mul, ne, neg, not_, or_, pow_, round_, select, sign, sin,
                                             sinh, sqrt, sub, tan, tanh, xor)
from compiler.primitives.factor import cholesky, qr
from compiler.primitives.indexing import (dynamic_slice, dynamic_update_slice, scatter, take,
                                          update_slice)
from compiler.primitives.linalg import dot_general
from compiler.primitives.lu import lu_, lu_solve_, triangular_solve_
from compiler.primitives.random import philox, rng_key
from compiler.primitives.reduce import (argmax, argmin, cummax, cummin, cumprod, cumsum, reduce_and, reduce_max,
                                        reduce_min, reduce_or, reduce_prod, reduce_sum)
from compiler.primitives.spectral import eigh, svd
from compiler.primitives.shape import (broadcast_in_dim, concatenate, constant, diagonal, iota, pad,
                                       reshape, rev, size_of, slice_, transpose)
from compiler.primitives.sorting import sort  # noqa: F401
from compiler.primitives.special import (bitcast, digamma, erf, erfc, erfcinv, erfcx,  # noqa: F401
                                         erfinv, gamma, i0e, i1e, lgamma, polygamma)

from compiler.primitives.fft import fft  # noqa: F401
from compiler.primitives.searching import interp  # noqa: F401
from compiler.primitives.fft_runtime import fft_runtime  # noqa: F401
from compiler.primitives.online import reduce_max_sumexp  # noqa: F401

if undefined():
    raise AssertionError(f"declared in ops.py but defined nowhere: {undefined()}")

__all__ = ["REGISTRY", "Primitive", "ShapeError"]
