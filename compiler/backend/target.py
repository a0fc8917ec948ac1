"""Target description: the host triple, CPU name and features, and TargetMachines.

Everything that depends on *which* CPU code is generated for lives here, so the
rest of the backend can ask one question ("what is the target?") and the cache
can key on one value (:func:`Target.magic`).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import llvmlite
import llvmlite.binding as llvm

from runtime import cpu


@functools.cache
def _initialize() -> None:
    # llvm.initialize() raises since llvmlite 0.45; the native target and asm
    # printer still have to be registered explicitly.
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


@dataclass(frozen=True)
class Target:
    """A code-generation target: triple, CPU name and feature string."""

    triple: str
    cpu: str
    features: str

    @property
    def feature_set(self) -> frozenset[str]:
        """Enabled features without the leading '+', e.g. {'avx2', 'fma'}."""
        return frozenset(f[1:] for f in self.features.split(",") if f.startswith("+"))

    @property
    def has_fma(self) -> bool:
        return "fma" in self.feature_set

    @property
    def vector_bits(self) -> int:
        """Width of the widest floating-point vector register."""
        feats = self.feature_set
        if "avx512f" in feats:
            return 512
        if "avx" in feats:
            return 256
        return 128

    def magic(self) -> tuple[str, str, str, str]:
        """What compiled code depends on: part of every cache key."""
        return (self.triple, self.cpu, self.features, llvmlite.__version__)

    def machine(self, *, jit: bool = False) -> llvm.TargetMachine:
        """A TargetMachine at O3. Position-independent so one object serves
        both the in-process JIT and a shared library. An execution engine takes
        ownership of its machine, so JIT machines are never shared.

        The large code model: MCJIT maps an object's code and constants separately,
        and in a long-running process (freed array memory leaving holes, other JITs
        and libraries mapped) they can land more than 2 GiB apart, beyond the reach
        of the small model's 32-bit offsets: LLVM then aborts the process
        (RuntimeDyldELF's ``isInt<32>(RealOffset)`` assertion, seen in a benchmark
        run with JAX and torch loaded). Measured: no run-time cost on fused
        transcendental, reduction, sort and unrolled-solve kernels."""
        return _new_machine(self, True) if jit else _machine(self)


@functools.cache
def _machine(target: Target) -> llvm.TargetMachine:
    return _new_machine(target, False)


def _new_machine(target: Target, jit: bool) -> llvm.TargetMachine:
    _initialize()
    llvm_target = llvm.Target.from_triple(target.triple)
    return llvm_target.create_target_machine(
        cpu=target.cpu, features=target.features, opt=3, reloc="pic",
        codemodel="large", jit=jit)


@functools.cache
def host() -> Target:
    """The CPU this process runs on.

    LLVM reads the features from CPUID; the operating system may withhold some
    of them (Linux clears RDSEED on CPUs whose RDSEED is faulty, and hypervisors
    mask others). A feature the OS can report but does not is turned off, so
    code and manifests never rely on it and `runtime.load` accepts the build on
    the machine that made it.
    """
    _initialize()
    return Target(llvm.get_process_triple(), llvm.get_host_cpu_name(),
                  _os_features(llvm.get_host_cpu_features().flatten(), cpu.host_features()))


def _os_features(features: str, reported: frozenset[str] | None) -> str:
    """`features` with every '+f' the OS could report but does not turned into '-f'."""
    if reported is None:
        return features
    known = cpu.checkable()
    out = []
    for f in features.split(","):
        if f.startswith("+") and f[1:] in known and f[1:] not in reported:
            f = "-" + f[1:]
        out.append(f)
    return ",".join(out)


def named(cpu: str) -> Target:
    """A target for `cpu`: 'host', 'generic' (baseline x86-64) or an LLVM CPU name."""
    if cpu == "host":
        return host()
    _initialize()
    return Target(llvm.get_process_triple(), "x86-64" if cpu == "generic" else cpu, "")
