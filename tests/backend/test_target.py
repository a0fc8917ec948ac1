"""The host target never claims a CPU feature the operating system withholds."""
from runtime import cpu

from compiler.backend import target


def test_feature_the_os_withholds_is_turned_off():
    # CPUID says rdseed and avx2; the OS reports avx2 only (Linux clears RDSEED
    # on CPUs whose RDSEED is faulty). 'foo' is outside what the OS can report.
    reported = frozenset({"avx2"})
    got = target._os_features("+avx2,+rdseed,-avx512f,+foo", reported)
    assert got.split(",") == ["+avx2", "-rdseed", "-avx512f", "+foo"]


def test_unreadable_os_features_leave_llvm_features_alone():
    assert target._os_features("+avx2,+rdseed", None) == "+avx2,+rdseed"


def test_host_target_needs_nothing_this_cpu_lacks():
    # what aotx build records for --cpu host must load on the same machine
    assert not cpu.missing_features(sorted(target.host().feature_set))
