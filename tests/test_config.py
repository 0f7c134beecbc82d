"""dperm.show_config() / get_config(), and that this build really has OpenMP."""
import os

import pytest

import dperm


def test_get_config_keys_and_types():
    cfg = dperm.get_config()
    assert cfg["version"] == dperm.__version__
    assert isinstance(cfg["openmp"], bool)
    assert isinstance(cfg["openmp_built"], bool)
    assert isinstance(cfg["openmp_max_threads"], int) and cfg["openmp_max_threads"] >= 1
    assert isinstance(cfg["default_n_threads"], int) and cfg["default_n_threads"] >= 1
    # what meson found and what the compiled kernels report must agree
    assert cfg["openmp"] == cfg["openmp_built"]
    if not cfg["openmp"]:
        assert cfg["default_n_threads"] == 1


def test_show_config_prints_every_key(capsys):
    assert dperm.show_config() is None
    out = capsys.readouterr().out
    for key, value in dperm.get_config().items():
        assert key in out
        assert str(value) in out


@pytest.mark.skipif(os.environ.get("DPERM_ALLOW_SERIAL_BUILD") == "1",
                    reason="DPERM_ALLOW_SERIAL_BUILD=1: a serial build was asked for")
def test_built_with_openmp():
    """A silently serial build (OpenMP not found by meson) must fail here.

    On a platform without OpenMP, set DPERM_ALLOW_SERIAL_BUILD=1 to skip this
    test explicitly.
    """
    cfg = dperm.get_config()
    assert cfg["openmp"] is True, (
        "dperm was built without OpenMP: the kernels run on one thread. Install an "
        "OpenMP runtime (e.g. libgomp / libomp) and rebuild, or set "
        "DPERM_ALLOW_SERIAL_BUILD=1 if a serial build is intended.")
    assert cfg["openmp_built"] is True
    assert cfg["default_n_threads"] == len(os.sched_getaffinity(0))
