"""Host callbacks: a forward outside the supported subset runs in Python, called from the kernel."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from compiler import Function, grad, jit, vmap
from compiler.function.trampoline import check_buildable, uses_host_callbacks
from compiler.errors import CompileError, UnsupportedError

rng = np.random.default_rng(2)


class Median(Function):
    """NumPy's own np.median as a host callback (output shape found on zeros)."""

    host_callback = True

    @staticmethod
    def forward(x):
        return np.median(x, axis=-1)


class Failing(Function):
    host_callback = True

    @staticmethod
    def forward(x):
        if x.max() > 100:
            raise KeyError(f"too big: {x.max()}")
        return x * 2


class Counter(Function):
    host_callback = True
    mode = "ok"

    @staticmethod
    def forward(x):
        if Counter.mode == "shape":
            return np.zeros(x.shape[0] + 1)
        if Counter.mode == "dtype":
            return x.astype(np.float32)
        if Counter.mode == "structure":
            return x, x
        return x + 1


class Flags(Function):
    """bool and int32 buffers, a 2-d input and a static argument."""
    host_callback = True

    writeable: list = []

    @staticmethod
    def forward(mask, counts, offset):
        Flags.writeable.append(mask.flags.writeable)
        return np.where(mask, counts + offset, -1).astype(np.int32), mask.any(axis=1)


class Symbolic(Function):
    host_callback = True

    @staticmethod
    def forward(x):
        return np.cumsum(x)[::-1].copy()

    @staticmethod
    def abstract(x):
        return x                                   # same shape and dtype (a ShapeDtype)


def test_forward_outside_the_subset_becomes_a_host_callback():
    x = rng.standard_normal((3, 5))
    f = jit(lambda x: Median.apply(np.exp(x)) * 2.0)
    np.testing.assert_allclose(f(x), np.median(np.exp(x), -1) * 2)
    assert uses_host_callbacks(f.specialize(x).program.function)
    assert not uses_host_callbacks(jit(lambda x: x * 2.0).specialize(x).program.function)


def test_exception_propagates_as_itself_and_the_kernel_stays_usable():
    f = jit(lambda x: Failing.apply(np.exp(x)) + 1.0)
    x = np.zeros(1000)
    np.testing.assert_allclose(f(x), np.full(1000, 3.0))
    with pytest.raises(KeyError, match="too big") as info:
        f(np.full(1000, 10.0))
    assert any(frame.name == "forward" for frame in __import__("traceback").extract_tb(info.tb))
    np.testing.assert_allclose(f(x), np.full(1000, 3.0))


def test_failing_callback_frees_the_kernel_temporaries():
    def statm_rss() -> int:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * 4096

    # two 8 MB temporaries around the callback
    f = jit(lambda x: (Failing.apply(np.exp(x) * 2.0) * 3.0).sum() + np.sin(x).sum())
    big = np.full(1 << 20, 10.0)
    for _ in range(5):
        with pytest.raises(KeyError):
            f(big)
    before = statm_rss()
    for _ in range(100):              # 1.6 GB if leaked
        with pytest.raises(KeyError):
            f(big)
    assert statm_rss() - before < 200 * 2 ** 20


def test_exception_from_a_callback_inside_a_loop_and_a_branch():
    def g(x):
        y = x
        for _ in range(3):
            if y.sum() > 0:
                y = Failing.apply(y)
            else:
                y = -y
        return y

    f = jit(g)
    x = np.ones(4)
    np.testing.assert_allclose(f(x), g(x))
    with pytest.raises(KeyError):
        f(np.full(4, 60.0))


@pytest.mark.parametrize("mode, message", [
    ("shape", r"returned output 0 with shape \(5,\) and dtype float64, but the kernel expects shape \(4,\)"),
    ("dtype", r"returned output 0 with shape \(4,\) and dtype float32, but the kernel expects .*float64"),
    ("structure", r"returned output of structure \(\*, \*\), but the kernel was compiled for \*"),
])
def test_callback_returning_another_shape_dtype_or_structure(mode, message):
    f = jit(lambda x: Counter.apply(x))
    Counter.mode = "ok"
    np.testing.assert_allclose(f(np.ones(4)), 2.0)
    Counter.mode = mode
    try:
        with pytest.raises(ValueError, match=message) as info:
            f(np.ones(4))
        assert "Counter.forward (a host callback)" in str(info.value)
    finally:
        Counter.mode = "ok"


def test_dtypes_ranks_and_static_arguments():
    mask = rng.standard_normal((3, 4)) > 0
    counts = rng.integers(0, 9, (3, 4)).astype(np.int32)
    f = jit(lambda m, c: Flags.apply(m, c, 5))
    got_vals, got_any = f(mask, counts)
    assert Flags.writeable[-1] is False          # inputs are read-only views of kernel buffers
    want_vals, want_any = Flags.forward(mask, counts, 5)
    np.testing.assert_array_equal(got_vals, want_vals)
    np.testing.assert_array_equal(got_any, want_any)
    assert got_vals.dtype == np.int32 and got_any.dtype == np.bool_


def test_symbolic_sizes_need_abstract():
    f = jit(lambda x: Symbolic.apply(x * 2.0), signature="f64[n]")
    for n in (1, 5, 17):
        x = rng.standard_normal(n)
        np.testing.assert_allclose(f(x), np.cumsum(2 * x)[::-1])

    class NoAbstract(Function):
        host_callback = True

        @staticmethod
        def forward(x):
            return np.median(x, keepdims=True)

    with pytest.raises(CompileError, match=r"(?s)symbolic sizes .* abstract\(\*args\) staticmethod"):
        jit(lambda x: NoAbstract.apply(x), signature="f64[n]")


def test_forward_failing_on_zeros_at_compile_time_is_a_compile_error():
    class Picky(Function):
        host_callback = True         # (np.linalg.cholesky compiles: keep it a host callback)

        @staticmethod
        def forward(x):
            return np.log(np.linalg.cholesky(np.diag(x)))     # zeros: not positive definite

    with pytest.raises(CompileError, match=r"Picky.forward \(run once on zeros .*\) raised LinAlgError"):
        jit(lambda x: Picky.apply(x))(np.ones(3))


def test_host_callbacks_from_several_threads():
    f = jit(lambda x: Failing.apply(np.exp(x)) + 1.0)
    f(np.zeros(8))
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        r = np.random.default_rng(seed)
        try:
            for i in range(100):
                x = r.standard_normal(64)
                np.testing.assert_allclose(f(x), 2 * np.exp(x) + 1)
                if i % 10 == 0:
                    with pytest.raises(KeyError):
                        f(np.full(64, 7.0))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_compiled_forward_is_used_when_possible_and_host_callback_false_forces_it():
    class Compiled(Function):
        host_callback = False

        @staticmethod
        def forward(x):
            return np.busday_count(x, x)

    with pytest.raises(UnsupportedError, match="busday_count"):
        jit(lambda x: Compiled.apply(x))(np.ones(3))


def test_vmap_of_a_host_callback_without_a_vmap_rule():
    with pytest.raises(UnsupportedError, match=r"vmap of Median needs a `vmap` staticmethod"):
        vmap(Median.apply)(np.ones((2, 3)))


def test_build_rejects_host_callbacks():
    f = jit(lambda x: Median.apply(x))
    fn = f.specialize(np.ones((2, 3))).program.function
    with pytest.raises(UnsupportedError, match="runs as a host callback"):
        check_buildable(fn, "median_kernel")


def test_host_callback_kernels_are_not_stored_in_the_disk_cache(tmp_path, monkeypatch):
    from compiler import cache
    stored = []
    monkeypatch.setattr(cache.disk().__class__, "put", lambda self, key, meta, obj: stored.append(key))

    def uses_median(x):
        return Median.apply(x) + 1.0

    def plain(x):
        return x.sum(-1) + 1.0

    jit(uses_median)(np.ones((2, 3)))
    assert stored == []
    jit(plain)(np.ones((2, 3)))              # the control: a kernel without callbacks is stored
    assert len(stored) == 1


def test_grad_of_a_host_callback_uses_the_backward():
    class HostSquare(Function):
        host_callback = True

        @staticmethod
        def forward(x):
            return np.square(x)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g

    x = rng.standard_normal(5)
    np.testing.assert_allclose(grad(lambda x: HostSquare.apply(x).sum())(x), 2 * x)
