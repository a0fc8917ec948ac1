"""A CPython entry point for a loaded kernel: the fast call path (docs/performance.md,
"Call overhead").

Calling a kernel through ctypes costs microseconds: every argument becomes a ctypes object,
the pointer arrays are built in Python, the outputs are allocated by a Python call to
``np.empty``. This module compiles once per process, with llvmlite, one native function
``entry(self, args, nargs, kwnames)`` with CPython's ``METH_FASTCALL | METH_KEYWORDS``
convention that does the whole
call for one specialization described by a table of 64-bit words:

* each argument must be exactly what the specialization was compiled for: an exact
  ``np.ndarray`` with the same dtype object, rank and shape, C-contiguous (or, for a weakly
  typed scalar, an exact Python ``float``);
* the outputs are allocated by NumPy's own allocator (``PyArray_NewFromDescr``, what
  ``np.empty`` calls), so they are ordinary arrays with NumPy's huge-page hints;
* the kernel is called directly, with the GIL released when the arrays are large
  (``RELEASE_GIL_BYTES``);
* the result is the single output (a NumPy scalar for a 0-d one, as ``arr[()]``), or what
  ``wrap(*outputs)`` returns for several.

Anything else (another type, a copy to make, a conversion, an argument count, keywords) calls
``fallback(*args, **kwargs)``: the checked Python path, which raises the same errors as ever or
installs the entry of another specialization. A failed kernel status calls
``on_error(status, *args)``, which raises the kernel's exception. The entry is a builtin
function object whose ``self`` is a tuple holding the table, these callables and the
loaded code, so the code lives as long as the entry.

The entry reads ``PyArrayObject`` and ``PyFloatObject`` fields at fixed offsets: the offsets
are checked against live objects before the first entry is made, and on any mismatch (another
Python or NumPy ABI) :func:`make_entry` returns None and kernels keep the Python path.
"""
from __future__ import annotations

import ctypes
import math
import threading
from typing import Any, Callable, Sequence

import llvmlite.binding as llvm
import numpy as np

from compiler.backend.target import _initialize
from runtime import loader

#: at least this many bytes of arguments and results: the call releases the GIL while the kernel
#: runs (other Python threads run meanwhile); below it, releasing and taking the GIL back would
#: cost more than the kernel
RELEASE_GIL_BYTES = 1 << 15

#: the table's fixed header, in int64 words (then per argument: kind, and for an array dtype,
#: itemsize, ndim, dims; per output: dtype, the argument written in place as that output or -1,
#: ndim, dims; a dim >= 0 is a size, -(k + 1) the kernel's symbol k; per updated argument: its
#: index and its new value's output index)
_KERNEL, _N_IN, _N_OUT, _MODE, _NDARRAY, _FLOAT, _NEW, _RETURN, _N_SYMBOLS, _N_UPDATES = range(10)
_HEADER = 10
MODE_RELEASE_GIL, MODE_SINGLE, MODE_SCALAR, MODE_NONE = 1, 2, 4, 8
KIND_ARRAY, KIND_FLOAT, KIND_UPDATED = 0, 1, 2

# PyObject, PyArrayObject_fields and PyFloatObject offsets on 64-bit CPython (checked by _layout_ok)
_OB_TYPE, _DATA, _ND, _DIMS, _DESCR, _FLAGS, _FVAL, _TUPLE_ITEMS = 8, 16, 24, 32, 56, 64, 16, 24
_C_CONTIGUOUS = 0x0001
# indices of NumPy's C-API table (stable across NumPy versions: its ABI)
_API_RETURN, _API_NEW_FROM_DESCR = 76, 94

_PYTHON_API = ("Py_IncRef", "Py_DecRef", "PyLong_AsVoidPtr", "PyLong_FromLongLong",
               "PyObject_Vectorcall", "PyEval_SaveThread", "PyEval_RestoreThread")

_IR = r"""
declare void @Py_IncRef(ptr)
declare void @Py_DecRef(ptr)
declare ptr @PyLong_AsVoidPtr(ptr)
declare ptr @PyLong_FromLongLong(i64)
declare ptr @PyObject_Vectorcall(ptr, ptr, i64, ptr)
declare ptr @PyEval_SaveThread()
declare void @PyEval_RestoreThread(ptr)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
declare void @llvm.memmove.p0.p0.i64(ptr, ptr, i64, i1)

define internal void @decref_n(ptr %objs, i64 %n) {
entry:
  br label %head
head:
  %i = phi i64 [0, %entry], [%i.next, %body]
  %more = icmp slt i64 %i, %n
  br i1 %more, label %body, label %done
body:
  %p = getelementptr ptr, ptr %objs, i64 %i
  %o = load ptr, ptr %p
  call void @Py_DecRef(ptr %o)
  %i.next = add i64 %i, 1
  br label %head
done:
  ret void
}

define internal i64 @word(ptr %d, i64 %i) alwaysinline {
  %p = getelementptr i64, ptr %d, i64 %i
  %v = load i64, ptr %p
  ret i64 %v
}

define internal ptr @item(ptr %tuple, i64 %i) alwaysinline {
  %k = add i64 %i, 3
  %p = getelementptr ptr, ptr %tuple, i64 %k
  %v = load ptr, ptr %p
  ret ptr %v
}

define ptr @aotx_pyentry(ptr %self, ptr %args, i64 %nargs, ptr %kwnames) {
entry:
  %item0 = call ptr @item(ptr %self, i64 0)
  %d = call ptr @PyLong_AsVoidPtr(ptr %item0)
  %nin = call i64 @word(ptr %d, i64 1)
  %nout = call i64 @word(ptr %d, i64 2)
  %mode = call i64 @word(ptr %d, i64 3)
  %nin1 = add i64 %nin, 1
  %nout1 = add i64 %nout, 1
  %inp = alloca ptr, i64 %nin1
  %fl = alloca double, i64 %nin1
  %outp = alloca ptr, i64 %nout1
  %outo = alloca ptr, i64 %nout1
  %vec = alloca ptr, i64 %nin1
  %nsym = call i64 @word(ptr %d, i64 8)
  %nupd = call i64 @word(ptr %d, i64 9)
  %inbytes = alloca i64, i64 %nin1
  %nsym1 = add i64 %nsym, 1
  %syms = alloca i64, i64 %nsym1
  %odimbuf = alloca i64, i64 64
  %symbytes = mul i64 %nsym1, 8
  call void @llvm.memset.p0.i64(ptr %syms, i8 -1, i64 %symbytes, i1 false)
  %okn = icmp eq i64 %nargs, %nin
  %nokw = icmp eq ptr %kwnames, null
  %okcall = and i1 %okn, %nokw
  br i1 %okcall, label %in.head, label %slow

in.head:
  %i = phi i64 [0, %entry], [%i.next, %in.next]
  %p = phi i64 [10, %entry], [%p.next, %in.next]
  %more = icmp slt i64 %i, %nin
  br i1 %more, label %in.body, label %out.start

in.body:
  %argp = getelementptr ptr, ptr %args, i64 %i
  %o = load ptr, ptr %argp
  %typep = getelementptr i8, ptr %o, i64 8
  %type = load ptr, ptr %typep
  %type.i = ptrtoint ptr %type to i64
  %inslot = getelementptr ptr, ptr %inp, i64 %i
  %kind = call i64 @word(ptr %d, i64 %p)
  %isfloat = icmp eq i64 %kind, 1
  br i1 %isfloat, label %in.float, label %in.array

in.float:
  %ft = call i64 @word(ptr %d, i64 5)
  %fok = icmp eq i64 %type.i, %ft
  br i1 %fok, label %in.float.ok, label %slow

in.float.ok:
  %fvp = getelementptr i8, ptr %o, i64 16
  %fv = load double, ptr %fvp
  %slot = getelementptr double, ptr %fl, i64 %i
  store double %fv, ptr %slot
  store ptr %slot, ptr %inslot
  %fbytes = getelementptr i64, ptr %inbytes, i64 %i
  store i64 0, ptr %fbytes
  %p.f = add i64 %p, 1
  br label %in.next

in.array:
  %at = call i64 @word(ptr %d, i64 4)
  %tok = icmp eq i64 %type.i, %at
  br i1 %tok, label %in.a1, label %slow

in.a1:
  %descrp = getelementptr i8, ptr %o, i64 56
  %descr = load i64, ptr %descrp
  %p1 = add i64 %p, 1
  %wd = call i64 @word(ptr %d, i64 %p1)
  %dok = icmp eq i64 %descr, %wd
  %flagsp = getelementptr i8, ptr %o, i64 64
  %flags = load i32, ptr %flagsp
  %cf = and i32 %flags, 1
  %cok = icmp ne i32 %cf, 0
  %wf = and i32 %flags, 1024
  %writeable = icmp ne i32 %wf, 0
  %updated = icmp eq i64 %kind, 2
  %wrong = icmp ugt i1 %updated, %writeable
  %wok = xor i1 %wrong, true
  %p2 = add i64 %p, 2
  %itemsize = call i64 @word(ptr %d, i64 %p2)
  %ndp = getelementptr i8, ptr %o, i64 24
  %nd32 = load i32, ptr %ndp
  %nd = sext i32 %nd32 to i64
  %pn = add i64 %p, 3
  %wnd = call i64 @word(ptr %d, i64 %pn)
  %ndok = icmp eq i64 %nd, %wnd
  %ok0 = and i1 %dok, %cok
  %ok1 = and i1 %ok0, %wok
  %ok2 = and i1 %ok1, %ndok
  %dimsp = getelementptr i8, ptr %o, i64 32
  %dims = load ptr, ptr %dimsp
  %p3 = add i64 %p, 4
  br i1 %ok2, label %dims.head, label %slow

dims.head:
  %k = phi i64 [0, %in.a1], [%k.next, %dims.fixed], [%k.next, %dims.symbol]
  %size = phi i64 [%itemsize, %in.a1], [%size.next, %dims.fixed], [%size.next, %dims.symbol]
  %kmore = icmp slt i64 %k, %nd
  br i1 %kmore, label %dims.body, label %in.a2

dims.body:
  %dkp = getelementptr i64, ptr %dims, i64 %k
  %dk = load i64, ptr %dkp
  %wki = add i64 %p3, %k
  %wk = call i64 @word(ptr %d, i64 %wki)
  %k.next = add i64 %k, 1
  %size.next = mul i64 %size, %dk
  %fixed = icmp sge i64 %wk, 0
  br i1 %fixed, label %dims.fixed, label %dims.symbol

dims.fixed:
  %kok = icmp eq i64 %dk, %wk
  br i1 %kok, label %dims.head, label %slow

dims.symbol:
  %sidx = sub i64 -1, %wk
  %sp = getelementptr i64, ptr %syms, i64 %sidx
  %sv = load i64, ptr %sp
  %unbound = icmp slt i64 %sv, 0
  %same = icmp eq i64 %sv, %dk
  %sok = or i1 %unbound, %same
  store i64 %dk, ptr %sp
  br i1 %sok, label %dims.head, label %slow

in.a2:
  %datap = getelementptr i8, ptr %o, i64 16
  %data = load ptr, ptr %datap
  store ptr %data, ptr %inslot
  %abytes = getelementptr i64, ptr %inbytes, i64 %i
  store i64 %size, ptr %abytes
  %p.a = add i64 %p3, %nd
  br label %in.next

in.next:
  %p.next = phi i64 [%p.f, %in.float.ok], [%p.a, %in.a2]
  %i.next = add i64 %i, 1
  br label %in.head

out.start:
  %hasupd = icmp sgt i64 %nupd, 0
  br i1 %hasupd, label %ov.outer, label %out.start2

ov.outer:
  %oa = phi i64 [0, %out.start], [%oa.next, %ov.inner.done]
  %oamore = icmp slt i64 %oa, %nin
  br i1 %oamore, label %ov.outer.body, label %out.start2

ov.outer.body:
  %oap = getelementptr ptr, ptr %inp, i64 %oa
  %oaptr = load ptr, ptr %oap
  %oas = ptrtoint ptr %oaptr to i64
  %oabp = getelementptr i64, ptr %inbytes, i64 %oa
  %oab = load i64, ptr %oabp
  %oae = add i64 %oas, %oab
  %oa.next = add i64 %oa, 1
  br label %ov.inner

ov.inner:
  %ob = phi i64 [%oa.next, %ov.outer.body], [%ob.next, %ov.inner.body]
  %obmore = icmp slt i64 %ob, %nin
  br i1 %obmore, label %ov.inner.body, label %ov.inner.done

ov.inner.body:
  %obpp = getelementptr ptr, ptr %inp, i64 %ob
  %obptr = load ptr, ptr %obpp
  %obs = ptrtoint ptr %obptr to i64
  %obbp = getelementptr i64, ptr %inbytes, i64 %ob
  %obb = load i64, ptr %obbp
  %obe = add i64 %obs, %obb
  %ne1 = icmp sgt i64 %oab, 0
  %ne2 = icmp sgt i64 %obb, 0
  %lt1 = icmp ult i64 %oas, %obe
  %lt2 = icmp ult i64 %obs, %oae
  %x1 = and i1 %ne1, %ne2
  %x2 = and i1 %lt1, %lt2
  %overlap = and i1 %x1, %x2
  %ob.next = add i64 %ob, 1
  br i1 %overlap, label %slow, label %ov.inner

ov.inner.done:
  br label %ov.outer

out.start2:
  %arrtype.i = call i64 @word(ptr %d, i64 4)
  %arrtype = inttoptr i64 %arrtype.i to ptr
  %newfn.i = call i64 @word(ptr %d, i64 6)
  %newfn = inttoptr i64 %newfn.i to ptr
  br label %out.head

out.head:
  %j = phi i64 [0, %out.start2], [%j.next, %out.ok]
  %q = phi i64 [%p, %out.start2], [%q.next, %out.ok]
  %jmore = icmp slt i64 %j, %nout
  br i1 %jmore, label %out.body, label %call

out.body:
  %od.i = call i64 @word(ptr %d, i64 %q)
  %od = inttoptr i64 %od.i to ptr
  %qa = add i64 %q, 1
  %alias = call i64 @word(ptr %d, i64 %qa)
  %q1 = add i64 %q, 2
  %ond = call i64 @word(ptr %d, i64 %q1)
  %ond32 = trunc i64 %ond to i32
  %q2 = add i64 %q, 3
  %aliased = icmp sge i64 %alias, 0
  br i1 %aliased, label %out.alias, label %out.fresh

out.alias:
  %aargp = getelementptr ptr, ptr %args, i64 %alias
  %aarg = load ptr, ptr %aargp
  call void @Py_IncRef(ptr %aarg)
  br label %out.ok

out.fresh:
  call void @Py_IncRef(ptr %od)
  br label %odim.head

odim.head:
  %m = phi i64 [0, %out.fresh], [%m.next, %odim.body]
  %mmore = icmp slt i64 %m, %ond
  br i1 %mmore, label %odim.body, label %out.new

odim.body:
  %wmi = add i64 %q2, %m
  %wm = call i64 @word(ptr %d, i64 %wmi)
  %ofixed = icmp sge i64 %wm, 0
  %osidx = sub i64 -1, %wm
  %osidx.c = select i1 %ofixed, i64 0, i64 %osidx
  %osp = getelementptr i64, ptr %syms, i64 %osidx.c
  %osv = load i64, ptr %osp
  %ov = select i1 %ofixed, i64 %wm, i64 %osv
  %obp = getelementptr i64, ptr %odimbuf, i64 %m
  store i64 %ov, ptr %obp
  %m.next = add i64 %m, 1
  br label %odim.head

out.new:
  %a = call ptr %newfn(ptr %arrtype, ptr %od, i32 %ond32, ptr %odimbuf, ptr null, ptr null, i32 0, ptr null)
  %anull = icmp eq ptr %a, null
  br i1 %anull, label %out.fail, label %out.ok

out.ok:
  %ao = phi ptr [%a, %out.new], [%aarg, %out.alias]
  %outoslot = getelementptr ptr, ptr %outo, i64 %j
  store ptr %ao, ptr %outoslot
  %adatap = getelementptr i8, ptr %ao, i64 16
  %adata = load ptr, ptr %adatap
  %outpslot = getelementptr ptr, ptr %outp, i64 %j
  store ptr %adata, ptr %outpslot
  %q.next = add i64 %q2, %ond
  %j.next = add i64 %j, 1
  br label %out.head

out.fail:
  call void @decref_n(ptr %outo, i64 %j)
  ret ptr null

call:
  %fn.i = call i64 @word(ptr %d, i64 0)
  %fn = inttoptr i64 %fn.i to ptr
  %rel = and i64 %mode, 1
  %release = icmp ne i64 %rel, 0
  br i1 %release, label %call.nogil, label %call.gil

call.nogil:
  %ts = call ptr @PyEval_SaveThread()
  %st1 = call i32 %fn(ptr %inp, ptr %outp, ptr %syms)
  call void @PyEval_RestoreThread(ptr %ts)
  br label %called

call.gil:
  %st2 = call i32 %fn(ptr %inp, ptr %outp, ptr %syms)
  br label %called

called:
  %st = phi i32 [%st1, %call.nogil], [%st2, %call.gil]
  %bad = icmp ne i32 %st, 0
  br i1 %bad, label %error, label %upd.head

upd.head:
  %u = phi i64 [0, %called], [%u.next, %upd.body]
  %r = phi i64 [%q, %called], [%r.next, %upd.body]
  %umore = icmp slt i64 %u, %nupd
  br i1 %umore, label %upd.body, label %result

upd.body:
  %uin = call i64 @word(ptr %d, i64 %r)
  %r1 = add i64 %r, 1
  %uout = call i64 @word(ptr %d, i64 %r1)
  %uinp = getelementptr ptr, ptr %inp, i64 %uin
  %udst = load ptr, ptr %uinp
  %uoutp = getelementptr ptr, ptr %outp, i64 %uout
  %usrc = load ptr, ptr %uoutp
  %ubp = getelementptr i64, ptr %inbytes, i64 %uin
  %ub = load i64, ptr %ubp
  %uself = icmp eq ptr %udst, %usrc
  %ub.c = select i1 %uself, i64 0, i64 %ub
  call void @llvm.memmove.p0.p0.i64(ptr %udst, ptr %usrc, i64 %ub.c, i1 false)
  %r.next = add i64 %r, 2
  %u.next = add i64 %u, 1
  br label %upd.head

error:
  call void @decref_n(ptr %outo, i64 %nout)
  %st64 = sext i32 %st to i64
  %so = call ptr @PyLong_FromLongLong(i64 %st64)
  %sonull = icmp eq ptr %so, null
  br i1 %sonull, label %error.null, label %error.call

error.null:
  ret ptr null

error.call:
  store ptr %so, ptr %vec
  %vec1 = getelementptr ptr, ptr %vec, i64 1
  %nbytes = mul i64 %nin, 8
  call void @llvm.memcpy.p0.p0.i64(ptr %vec1, ptr %args, i64 %nbytes, i1 false)
  %onerr = call ptr @item(ptr %self, i64 2)
  %re = call ptr @PyObject_Vectorcall(ptr %onerr, ptr %vec, i64 %nin1, ptr null)
  call void @Py_DecRef(ptr %so)
  ret ptr %re

result:
  %nres = sub i64 %nout, %nupd
  %resend = getelementptr ptr, ptr %outo, i64 %nres
  call void @decref_n(ptr %resend, i64 %nupd)
  %nn = and i64 %mode, 8
  %isnone = icmp ne i64 %nn, 0
  br i1 %isnone, label %ret.none, label %result.some

ret.none:
  %none = call ptr @item(ptr %self, i64 3)
  call void @Py_IncRef(ptr %none)
  ret ptr %none

result.some:
  %sg = and i64 %mode, 2
  %single = icmp ne i64 %sg, 0
  br i1 %single, label %ret.single, label %ret.wrap

ret.single:
  %o0 = load ptr, ptr %outo
  %sc = and i64 %mode, 4
  %scalar = icmp ne i64 %sc, 0
  br i1 %scalar, label %ret.scalar, label %ret.array

ret.array:
  ret ptr %o0

ret.scalar:
  %retfn.i = call i64 @word(ptr %d, i64 7)
  %retfn = inttoptr i64 %retfn.i to ptr
  %r0 = call ptr %retfn(ptr %o0)
  ret ptr %r0

ret.wrap:
  %wrap = call ptr @item(ptr %self, i64 3)
  %rw = call ptr @PyObject_Vectorcall(ptr %wrap, ptr %outo, i64 %nres, ptr null)
  call void @decref_n(ptr %outo, i64 %nres)
  ret ptr %rw

slow:
  %fb = call ptr @item(ptr %self, i64 1)
  %rs = call ptr @PyObject_Vectorcall(ptr %fb, ptr %args, i64 %nargs, ptr %kwnames)
  ret ptr %rs
}
"""


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


_METH_FASTCALL, _METH_KEYWORDS = 0x0080, 0x0002


class _Entry:
    """The compiled entry, its method record and NumPy's C-API functions (one per process)."""

    def __init__(self) -> None:
        _initialize()
        for name in _PYTHON_API:
            llvm.add_symbol(name, _address(getattr(ctypes.pythonapi, name)))
        module = llvm.parse_assembly(_IR)
        module.verify()
        # no optimization: the entry is a few branches and loads, as fast at -O0 (measured: within
        # 2 ns per call) and made in half the time (about 10 ms of CPU once per process)
        target = llvm.Target.from_default_triple().create_target_machine(opt=0, codemodel="jitdefault")
        self.engine = llvm.create_mcjit_compiler(module, target)
        self.engine.finalize_object()
        self.address = self.engine.get_function_address("aotx_pyentry")
        self.method = _MethodDef(b"aotx_kernel_entry", self.address, _METH_FASTCALL | _METH_KEYWORDS, None)
        # function objects of our own: ctypes.pythonapi's are shared with any other user
        self.new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p)(
            ("PyCFunction_NewEx", ctypes.pythonapi))
        get = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
            ("PyCapsule_GetPointer", ctypes.pythonapi))
        capsule = np._core._multiarray_umath._ARRAY_API     # type: ignore[attr-defined]
        table = get(capsule, None) or 0
        self.api_return = ctypes.c_void_p.from_address(table + 8 * _API_RETURN).value or 0
        self.api_new = ctypes.c_void_p.from_address(table + 8 * _API_NEW_FROM_DESCR).value or 0

    def function(self, self_tuple: tuple) -> Callable[..., Any]:
        fn: Callable[..., Any] = self.new(ctypes.addressof(self.method), self_tuple, None)
        return fn


def _address(fn: Any) -> int:
    return ctypes.cast(fn, ctypes.c_void_p).value or 0


def _word(address: int) -> int:
    return ctypes.c_int64.from_address(address).value


def _layout_ok() -> bool:
    """Do the offsets the entry reads hold what they should on this Python and NumPy?"""
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        return False
    a = np.zeros((3, 5))
    b = a[:, ::2]
    x = 1.25
    t = (a, x)
    try:
        dims = ctypes.c_void_p.from_address(id(a) + _DIMS).value or 0
        return (_word(id(a) + _OB_TYPE) == id(np.ndarray) and _word(id(a) + _DATA) == a.ctypes.data
                and ctypes.c_int32.from_address(id(a) + _ND).value == 2
                and _word(dims) == 3 and _word(dims + 8) == 5
                and _word(id(a) + _DESCR) == id(a.dtype)
                and ctypes.c_int32.from_address(id(a) + _FLAGS).value & _C_CONTIGUOUS == 1
                and ctypes.c_int32.from_address(id(b) + _FLAGS).value & _C_CONTIGUOUS == 0
                and ctypes.c_double.from_address(id(x) + _FVAL).value == x
                and _word(id(t) + _TUPLE_ITEMS) == id(a) and _word(id(t) + _TUPLE_ITEMS + 8) == id(x)
                and _word(id(x) + _OB_TYPE) == id(float))
    except (AttributeError, ValueError, TypeError):
        return False


_LOCK = threading.Lock()
_MADE: list[_Entry | None] = []


def _entry() -> _Entry | None:
    """The process's entry, made once even when several threads ask at once (every function
    object made from it points into its method record and its code: a second one dropped
    would leave them dangling)."""
    if _MADE:
        return _MADE[0]
    with _LOCK:
        if not _MADE:
            _MADE.append(_Entry() if _layout_ok() and hasattr(np, "_core") else None)
        return _MADE[0]


Dims = tuple["int | str", ...]
Input = tuple[int, np.dtype, Dims]        # kind, dtype, dims (ints, or names of `symbols`)


def make_entry(kernel: int, inputs: Sequence[Input], outputs: Sequence[tuple[np.dtype, Dims]],
               *, fallback: Callable[..., Any], on_error: Callable[..., Any],
               wrap: Callable[..., Any] | None, keepalive: Any,
               symbols: Sequence[str] = (),
               updates: Sequence[int] = (),
               in_place: Sequence[int] = ()) -> Callable[..., Any] | None:
    """A callable ``entry(*args)`` that calls kernel address `kernel` when the arguments are
    exactly `inputs` (KIND_ARRAY: an ndarray of that dtype and shape, C-contiguous; KIND_FLOAT:
    a Python float, passed as a float64 0-d input), with new output arrays of `outputs`;
    ``fallback(*args)`` otherwise. A dim may name one of `symbols` (the kernel's symbolic dims,
    in the order it takes them): the first argument dim that names it gives its value, the
    others must agree, and output dims take it. A non-zero status returns
    ``on_error(status, *args)``. `updates` lists the arguments the kernel writes into: the
    last ``len(updates)`` outputs are their new values, copied into them after a successful
    call (such an argument must be writeable, and no two array arguments may share memory,
    else the fallback); the other outputs are the results. With one result and `wrap` None it
    `in_place` lists those the kernel writes where they live: the argument itself is passed
    as that output (no allocation, no copy). With one result and `wrap` None it
    returns that result (a 0-d one as a NumPy scalar), with no result and `wrap` None it
    returns None, else ``wrap(*results)``. None when this process's CPython or
    NumPy is not laid out as the entry expects, or a symbol is given by no argument dim."""
    bound = {d for kind, _, dims in inputs if kind != KIND_FLOAT for d in dims if isinstance(d, str)}
    if any(inputs[i][0] == KIND_FLOAT for i in updates) or len(updates) > len(outputs):
        return None
    if set(symbols) != bound or any(isinstance(d, str) and d not in bound
                                    for _, dims in outputs for d in dims):
        return None
    entry = _entry()
    if entry is None or not entry.api_new or not entry.api_return:
        return None
    index = {name: k for k, name in enumerate(symbols)}

    def encode(dims: Dims) -> list[int]:
        return [-(index[d] + 1) if isinstance(d, str) else int(d) for d in dims]

    def size(dtype: np.dtype, dims: Dims) -> int:     # symbolic: release the GIL
        static = [d for d in dims if isinstance(d, int)]
        return dtype.itemsize * math.prod(static) if len(static) == len(dims) else RELEASE_GIL_BYTES

    nbytes = 0
    words = [kernel, len(inputs), len(outputs), 0, id(np.ndarray), id(float), entry.api_new,
             entry.api_return, len(symbols), len(updates)]
    dtypes = []
    for i, (kind, dtype, dims) in enumerate(inputs):
        if kind == KIND_FLOAT:
            words.append(KIND_FLOAT)
            continue
        dtype = np.dtype(dtype)
        dtypes.append(dtype)
        kind = KIND_UPDATED if i in updates else KIND_ARRAY
        words += [kind, id(dtype), dtype.itemsize, len(dims), *encode(dims)]
        nbytes += size(dtype, dims)
    first = len(outputs) - len(updates)
    alias = {first + k: i for k, i in enumerate(updates) if i in in_place}
    for j, (dtype, dims) in enumerate(outputs):
        dtype = np.dtype(dtype)
        dtypes.append(dtype)
        words += [id(dtype), alias.get(j, -1), len(dims), *encode(dims)]
        nbytes += size(dtype, dims) if j not in alias else 0
    for k, i in enumerate(updates):
        words += [i, first + k]
    mode = MODE_RELEASE_GIL if nbytes >= RELEASE_GIL_BYTES else 0
    if wrap is None and first == 0:
        mode |= MODE_NONE                 # a function without results returns None
    elif wrap is None:
        if first != 1:
            raise ValueError("make_entry: wrap is needed unless there is one result or none")
        mode |= MODE_SINGLE | (MODE_SCALAR if not outputs[0][1] else 0)
    words[_MODE] = mode
    table = (ctypes.c_int64 * len(words))(*words)
    return entry.function((ctypes.addressof(table), fallback, on_error, wrap,
                           (table, dtypes, keepalive, entry)))


loader.entry_maker = make_entry          # runtime.load's kernels get entries too (runtime/loader.py)
