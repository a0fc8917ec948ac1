"""A process forked while another of its threads compiles a kernel: the child's own first call
of that kernel compiles it (compiler/api/kernel.py, the fork hook), instead of waiting forever
for a lock held by a thread the child does not have."""
import sys

import pytest

from tests.runtime.subproc import run_python

FORK_WHILE_COMPILING = """
import os, signal, threading
import numpy as np
import compiler.pipeline as pl
from compiler import jit

started, go = threading.Event(), threading.Event()
original = pl.optimize_ir


def held(fn):                      # the other thread stops inside its compile
    if threading.current_thread() is not threading.main_thread():
        started.set()
        go.wait()
    return original(fn)


pl.optimize_ir = held
k = jit(lambda x: x * 2.0 + 1.0)
t = threading.Thread(target=lambda: k(np.ones(3)))
t.start()
assert started.wait(120), "the compiling thread never reached the compile"
pid = os.fork()
if pid == 0:
    signal.alarm(60)               # a hang ends as SIGALRM
    os._exit(0 if np.array_equal(k(np.ones(3)), np.full(3, 3.0)) else 1)
go.set()
t.join()
assert np.array_equal(k(np.ones(3)), np.full(3, 3.0))
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(not hasattr(__import__("os"), "fork") or sys.platform == "darwin", reason="needs fork")
def test_a_child_forked_during_a_compile_compiles_for_itself(tmp_path):
    (tmp_path / "fork_case.py").write_text(FORK_WHILE_COMPILING)     # the kernel needs a source file
    proc = run_python("import fork_case", tmp_path, AOTX_DISABLE_CACHE="1")
    assert proc.stdout.strip().splitlines()[-1] == "child 0", proc.stdout + proc.stderr
