import os
os.environ["OPENBLAS_NUM_THREADS"]="1"
import numpy as np, compiler.primitives.eig as E, time
from compiler import jit
E.UNROLL_MAX = 0
def t(f, a):
    f(a); best=1e9
    for _ in range(20):
        s=time.perf_counter(); f(a); best=min(best, time.perf_counter()-s)
    return best*1e3
for shape in [(1000,8,8),(256,256)]:
    a = np.random.default_rng(0).standard_normal(shape)
    A = jit(lambda a: np.linalg.eig(a)[0])
    B = jit(lambda a: np.linalg.eig(a))
    C = jit(lambda a: np.linalg.eigvals(a))
    print(shape, "w-only %.2f  full %.2f  eigvals %.2f  numpy eig %.2f" % (t(A,a), t(B,a), t(C,a), t(np.linalg.eig,a)))
