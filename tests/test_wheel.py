"""The installed wheel is what a user gets from `pip install dperm`: self-contained, compiled, OpenMP.

Skipped unless DPERM_WHEEL_TEST=1. .ci/run sets it when it runs this suite against the
wheel made by tools/build-wheels.sh, installed in a fresh virtual environment, from a copy
of tests/ outside the checkout, with no C compiler on PATH. Then:

- dperm is imported from site-packages, not from a source tree or an editable install;
- no C compiler is reachable (so nothing here could have been compiled on the spot);
- every compiled module that links OpenMP loads the libgomp vendored by auditwheel into
  site-packages/dperm.libs/, not the system's (an unrepaired wheel fails here);
- the kernels report OpenMP, the build carries the portable SIMD levels (no -march=native),
  and a small private fit runs.
"""
import os
import re
import shutil
import struct
import subprocess
import sysconfig
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(os.environ.get("DPERM_WHEEL_TEST") != "1",
                                reason="tests of an installed wheel: set DPERM_WHEEL_TEST=1 "
                                       "(.ci/run does, against tools/build-wheels.sh's wheel)")

import dperm  # noqa: E402

PKG = Path(dperm.__file__).resolve().parent
LIBS = PKG.parent / "dperm.libs"          # where auditwheel repair puts vendored libraries
COMPILERS = ("cc", "gcc", "clang")


def _extension_modules():
    return sorted(p for p in PKG.rglob("*.so") if p.is_file())


def test_imported_from_site_packages_not_a_checkout():
    site = {Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib")}
    assert PKG.parent in site, f"dperm imported from {PKG}, not from site-packages {site}"
    assert PKG.parent.name in ("site-packages", "dist-packages"), PKG
    checkout = [p for p in PKG.parents if (p / ".git").exists()]
    assert not checkout, f"dperm ({PKG}) lies inside a git checkout: {checkout[0]}"


def test_no_c_compiler_on_path():
    found = {c: shutil.which(c) for c in COMPILERS if shutil.which(c)}
    assert not found, f"a C compiler is on PATH: {found}"


# ------------------------------------------------------------------ vendored OpenMP runtime
def _ldd_gomp(module):
    """{libgomp soname: resolved path or None} as the dynamic loader resolves them (ldd)."""
    out = subprocess.run(["ldd", str(module)], capture_output=True, text=True, check=True).stdout
    assert "not found" not in out, f"ldd {module}:\n{out}"
    found = {}
    for line in out.splitlines():
        m = re.match(r"\s*(libgomp\S*)\s+=>\s+(\S+)", line)
        if m:
            found[m.group(1)] = m.group(2)
    return found


def _elf_dynamic(path):
    """(DT_NEEDED names, DT_RPATH + DT_RUNPATH entries) of a little-endian ELF64 file."""
    data = Path(path).read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, f"{path}: not ELF64 LE"
    e_shoff, = struct.unpack_from("<Q", data, 0x28)
    e_shentsize, e_shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + i * e_shentsize)
                for i in range(e_shnum)]
    dynamic = [s for s in sections if s[1] == 6]            # SHT_DYNAMIC
    assert dynamic, f"{path}: no dynamic section"
    _, _, _, _, off, size, link, _, _, entsize = dynamic[0]
    stroff = sections[link][4]

    def string(i):
        return data[stroff + i:data.index(b"\0", stroff + i)].decode()

    needed, paths = [], []
    for pos in range(off, off + size, entsize):
        tag, val = struct.unpack_from("<qQ", data, pos)
        if tag == 0:
            break
        if tag == 1:                                        # DT_NEEDED
            needed.append(string(val))
        elif tag in (15, 29):                               # DT_RPATH, DT_RUNPATH
            paths += string(val).split(":")
    return needed, paths


def _elf_gomp(module):
    """Without ldd: libgomp sonames resolved through the module's RPATH/RUNPATH only."""
    needed, paths = _elf_dynamic(module)
    found = {}
    for name in (n for n in needed if n.startswith("libgomp")):
        found[name] = None
        for p in paths:
            cand = Path(p.replace("$ORIGIN", str(module.parent)).replace(
                "${ORIGIN}", str(module.parent))) / name
            if cand.is_file():
                found[name] = str(cand)
                break
    return found


def test_openmp_runtime_is_vendored_in_the_wheel():
    modules = _extension_modules()
    assert modules, f"no compiled extension modules under {PKG}"
    resolve = _ldd_gomp if shutil.which("ldd") else _elf_gomp
    linking = {}
    for mod in modules:
        gomp = resolve(mod)
        if gomp:
            linking[mod] = gomp
    assert linking, f"no extension module of {PKG} links libgomp: {modules}"
    libs = LIBS.resolve()
    for mod, gomp in linking.items():
        for name, target in gomp.items():
            assert target is not None, f"{mod.name}: {name} does not resolve"
            assert Path(target).resolve().parent == libs, (
                f"{mod.relative_to(PKG.parent)} loads {name} from {target}, not from the "
                f"wheel's {libs} (was the wheel repaired with auditwheel?)")


def test_kernels_report_openmp():
    cfg = dperm.get_config()
    assert cfg["openmp"] is True, cfg
    assert cfg["openmp_built"] is True, cfg
    assert cfg["openmp_max_threads"] >= 1, cfg


def test_kernels_are_portable():
    """A wheel carries the portable kernel levels (chosen at import), not a -march=native
    build of the machine that built it."""
    cfg = dperm.get_config()
    assert "native" not in cfg["simd_built"], cfg
    assert cfg["simd_built"][0] == "baseline", cfg
    assert cfg["simd"] in cfg["simd_built"] and cfg["simd"] in cfg["simd_cpu"], cfg


@pytest.mark.filterwarnings("ignore::dperm.exceptions.PrivacyLeakWarning")   # the fixed seed
def test_a_small_private_fit_runs():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]    # row norms <= 1
    y = (X @ np.array([1.0, -1.0, 0.5, 0.0, 2.0]) > 0).astype(int)
    clf = dperm.PrivateLinearClassifier(epsilon=1.0, classes=[0, 1], random_state=0)
    clf.fit(X, y)
    assert clf.coef_.shape[-1] == 5 and np.all(np.isfinite(clf.coef_))
    assert set(np.unique(clf.predict(X))) <= {0, 1}
    again = dperm.PrivateLinearClassifier(epsilon=1.0, classes=[0, 1], random_state=0).fit(X, y)
    np.testing.assert_array_equal(clf.coef_, again.coef_)      # seeded: reproducible
