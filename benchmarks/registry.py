"""The workloads of ``python -m benchmarks``: name -> (module in benchmarks/, title).

Each module defines ``cases(cfg: harness.Config) -> Iterable[harness.Case]``; adding a
workload is one entry here and one module.
"""
from __future__ import annotations

WORKLOADS: dict[str, tuple[str, str]] = {
    "W0": ("w0_limits", "limits: STREAM triad (2e7 float64), an FMA-bound loop"),
    "W1": ("w1_fused", "the fused transcendental expression, float64/float32, 1e3..1e8 elements"),
    "W2": ("w2_logsumexp", "row-wise logsumexp, 4096x1024"),
    "W3": ("w3_gradients", "per-example gradients: MLP 128-64-1 tanh (batch 1024), logistic regression"),
    "W4": ("w4_jacobians", "jacfwd/jacrev/hessian of tanh(A@x), n = 16, 64, 256; vmap(jacfwd)"),
    "W5": ("w5_overhead", "call overhead: 4-element add, new output and into a given output"),
    "W6": ("w6_compile", "compile time (W1, W3), cached load in a fresh process, import time"),
    "W7": ("w7_scaling", "threads (parallel=True) and time against batch size"),
    "corpus": ("corpus", "realistic NumPy kernels from tutorials, Q&A threads and packages"),
}
