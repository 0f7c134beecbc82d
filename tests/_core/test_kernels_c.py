"""The C kernels' vector layers against the scalar one, compiled from the same headers.

tests/c/kernel_probe.c prints every output of the dense block kernels, the losses and
the CSR passes (value + gradient, Hessian-vector; float64 and float32 values) on fixed
inputs as exact hex floats.  It is built here for each x86-64 level this CPU runs
(baseline = scalar, x86-64-v3 = AVX2, x86-64-v4 = AVX-512) and, when a cross compiler
and qemu-user are installed (Debian: gcc-aarch64-linux-gnu qemu-user), for AArch64 with
NEON and without it, run under qemu-aarch64.  Every build must match the x86-64 scalar
build within 1e-12 (relative to each output's largest entry).  The tests need a C
compiler: they skip where there is none (the installed-wheel run of .ci/run).
"""
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import dperm._core as core

HERE = Path(__file__).resolve().parent
CORE = HERE.parents[1] / "dperm" / "_core"
PROBE = HERE / "c" / "kernel_probe.c"
CC = shutil.which("cc") or shutil.which("gcc")
FLAGS = ["-std=c11", "-O3", "-Wall", "-Wno-unused-function", "-fopenmp-simd"]
X86 = {"baseline": [], "avx2": ["-march=x86-64-v3"], "avx512": ["-march=x86-64-v4"]}
WIDTH = {"baseline": 1, "avx2": 4, "avx512": 8}

pytestmark = pytest.mark.skipif(CC is None or not (CORE / "_rows.h").exists(),
                                reason="needs a C compiler and the source tree's headers")


def _build(tmp_path, name, flags, cc=None, include=CORE):
    exe = tmp_path / name
    cmd = [cc or CC, *FLAGS, *flags, f"-I{include}", str(PROBE), "-o", str(exe), "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, f"{' '.join(cmd)}\n{r.stderr}"
    return exe


def _run(cmd):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")
    width = int(lines[0].split()[1])
    out = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.split()
            out.setdefault(name, []).append(float.fromhex(value))
    return width, {k: np.array(v) for k, v in out.items()}


def _worst(res, ref):
    """Largest difference of each output, relative to its largest entry."""
    assert sorted(res) == sorted(ref)
    worst = {}
    for k in ref:
        assert res[k].shape == ref[k].shape, k
        scale = max(np.abs(ref[k]).max(), 1e-300)
        worst[k] = float(np.abs(res[k] - ref[k]).max() / scale)
    return worst


@pytest.fixture(scope="module")
def scalar_x86(tmp_path_factory):
    exe = _build(tmp_path_factory.mktemp("probe"), "scalar", X86["baseline"])
    return _run([exe])


def _x86_levels():
    return [lv for lv in ("avx2", "avx512") if lv in core.cpu_levels]


@pytest.mark.parametrize("level", _x86_levels())
def test_x86_vector_layers_match_the_scalar_one(tmp_path, scalar_x86, level):
    width, res = _run([_build(tmp_path, level, X86[level])])
    assert width == WIDTH[level]
    assert scalar_x86[0] == 1
    worst = _worst(res, scalar_x86[1])
    assert max(worst.values()) <= 1e-12, worst
    # the comparison is not vacuous: the vector build really computes differently
    # (other summation order, fused multiply-adds) in some output
    assert max(worst.values()) > 0.0


def test_a_broken_vector_layer_is_caught(tmp_path, scalar_x86):
    """Power: the AVX2 layer with one wrong intrinsic (a*a + c for a*b + c)."""
    if "avx2" not in core.cpu_levels:
        pytest.skip("this CPU has no AVX2")
    broken = tmp_path / "include"
    broken.mkdir()
    for h in ("_rows.h", "_csr.h"):
        shutil.copy(CORE / h, broken / h)
    text = (broken / "_rows.h").read_text()
    good = "return _mm256_fmadd_pd(a, b, c); }"
    assert text.count(good) == 1
    (broken / "_rows.h").write_text(text.replace(good, "return _mm256_fmadd_pd(a, a, c); }"))
    _, res = _run([_build(tmp_path, "broken", X86["avx2"], include=broken)])
    assert max(_worst(res, scalar_x86[1]).values()) > 1e-3


AARCH64_CC = shutil.which("aarch64-linux-gnu-gcc")
QEMU = shutil.which("qemu-aarch64") or shutil.which("qemu-aarch64-static")


@pytest.mark.skipif(AARCH64_CC is None or QEMU is None,
                    reason="no AArch64 cross compiler and qemu-user (Debian: "
                           "gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)")
@pytest.mark.parametrize("variant, flags, width", [
    ("neon", ["-march=armv8-a"], 2),
    ("scalar", ["-march=armv8-a+nosimd"], 1),
])
def test_aarch64_layers_match_the_x86_scalar_one(tmp_path, scalar_x86, variant, flags, width):
    exe = _build(tmp_path, f"aarch64-{variant}", ["-static", *flags], cc=AARCH64_CC)
    got_width, res = _run([QEMU, exe])
    assert got_width == width
    worst = _worst(res, scalar_x86[1])
    assert max(worst.values()) <= 1e-12, worst
