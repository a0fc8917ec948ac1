"""Pytrees: flatten/unflatten round trips, hashable treedefs, static leaves."""
from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

from compiler.frontend.pytrees import flatten, flatten_static, tree_map, unflatten

Point = namedtuple("Point", "x y")

TREES = [1, (1, 2), [1, (2, 3)], {"b": 1, "a": [2, 3]}, None, (None, 1), Point(1, (2, 3)),
         {"k": {"z": 1, "y": (2,)}}, [], ()]


@pytest.mark.parametrize("tree", TREES, ids=repr)
def test_round_trip(tree):
    leaves, td = flatten(tree)
    assert unflatten(td, leaves) == tree
    assert td.num_leaves == len(leaves)
    assert hash(td) == hash(flatten(tree)[1])


def test_dict_keys_sorted_and_none_is_empty():
    leaves, td = flatten({"b": 2, "a": None, "c": 1})
    assert leaves == [2, 1]
    assert unflatten(td, [5, 6]) == {"a": None, "b": 5, "c": 6}


def test_structure_differences():
    assert flatten((1, 2))[1] != flatten([1, 2])[1]
    assert flatten(Point(1, 2))[1] != flatten((1, 2))[1]
    with pytest.raises(ValueError):
        unflatten(flatten((1, 2))[1], [1])


def test_static_leaves_are_recorded_by_value():
    is_dyn = lambda x: isinstance(x, str) and x == "dyn"  # noqa: E731
    a = flatten_static(("dyn", 3, np.arange(3)), is_dyn)
    b = flatten_static(("dyn", 3, np.arange(3)), is_dyn)
    c = flatten_static(("dyn", 4, np.arange(3)), is_dyn)
    d = flatten_static(("dyn", 3.0, np.arange(3)), is_dyn)
    assert a[0] == ["dyn"] and a[1] == b[1] and hash(a[1]) == hash(b[1])
    assert a[1] != c[1] and a[1] != d[1]
    assert unflatten(a[1], ["x"])[:2] == ("x", 3)


def test_tree_map():
    assert tree_map(lambda a, b: a + b, {"a": (1, 2)}, {"a": (10, 20)}) == {"a": (11, 22)}
