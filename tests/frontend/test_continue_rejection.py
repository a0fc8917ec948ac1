"""`continue` under a data-dependent `if` is rejected at the `if`, with a hint;
the inverted form that the hint suggests compiles and matches NumPy."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import jit
from compiler.errors import UnsupportedError


def skip_large(x):
    s = 0.0
    for v in x:
        if v > 5:
            continue
        s = s + v
    return s


def skip_large_inverted(x):
    s = 0.0
    for v in x:
        if not v > 5:
            s = s + v
    return s


def test_continue_under_data_dependent_if_is_rejected_at_the_if():
    with pytest.raises(UnsupportedError) as info:
        jit(skip_large)(np.arange(10.0))
    err = info.value
    assert err.lineno == skip_large.__code__.co_firstlineno + 3
    assert "if v > 5:" in str(err) and "^" in str(err)
    assert "if not cond" in err.hint


def test_the_suggested_form_compiles():
    x = np.arange(10.0)
    assert jit(skip_large_inverted)(x) == skip_large_inverted(x) == 15.0
