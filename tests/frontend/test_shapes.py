"""Static shape arithmetic: array attributes (shape, ndim, size) used as compile-time values.

Shape manipulation and array creation functions are OpInfos of tests/ops/opinfo.py."""
from __future__ import annotations

import numpy as np

from tests.frontend.helpers import check, rand


def test_static_args_and_attributes():
    x = rand(2, 3)
    check(lambda a: np.zeros(a.shape) + a.ndim + a.size + len(a), x)
    check(lambda a: np.ones(a.shape[::-1]).T * a, x)
    check(lambda a: a.astype(a.dtype) * np.float64(a.shape[1]), x)
    check(lambda a: np.zeros((a.shape[0], 2 * a.shape[1]), dtype=a.dtype), x)
    check(lambda a: a.reshape(np.shape(a)[::-1]) + np.ndim(a) + np.size(a), x)


