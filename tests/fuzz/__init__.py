"""Differential fuzzing: random well-typed NumPy programs under random transform stacks.

* ``generator.py``: a seeded generator of programs (one NumPy operation per
  statement, over every dtype, broadcasting, reductions, matmuls, indexing and
  slicing, static loops, data-dependent ``if``/``while``) and of transform
  stacks (``jit``, signature kernels with symbolic dims, ``vmap`` with random
  ``in_dims``/``out_dims``/``chunk_size``, ``grad``, ``grad_and_value``, ``jacrev``,
  ``jacfwd``, ``hessian``, a jit function calling the kernel below it, nested to
  depth 3 or 4), rendered as Python source that can be written out and rerun;
* ``oracles.py``: every level of the stack against an independent oracle
  (NumPy running the source uncompiled, the IR interpreter, a Python loop for
  ``vmap``, finite differences for derivatives, ``jacrev == jacfwd``,
  ``hessian == jacfwd(jacrev)``, ``jvp`` and ``vjp`` at the top of the stack)
  with tolerances estimated from the program itself (see ``oracles.py``);
* ``minimize.py``: delta debugging over the statements and the stack;
* ``runner.py``: batches of programs in a subprocess (a crash kills only its
  batch, whose crashing program is then isolated), and the command line
  ``python -m tests.fuzz --minutes N --seed S --out FILE``.
"""
