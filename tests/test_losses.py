"""Per-sample losses against the closed forms of SPEC.md (losses table).

phi(z), phi'(z), phi''(z) come from the compiled kernels through
Loss.per_sample; the references below are written independently in numpy.
"""
import numpy as np
import pytest
from scipy.special import expit

from dperm.losses import LOSSES, get_loss

HS = [0.01, 0.1, 0.5, 1.0, 2.0]


# ---------------------------------------------------------------- references
def ref_logistic(z):
    z = np.asarray(z, dtype=np.float64)
    return np.logaddexp(0.0, -z), -expit(-z), expit(z) * expit(-z)


# The pieces are chosen on u = 1 - z, which is exact for z in [1/2, 2] (Sterbenz), so
# the float z written "1 + h" is classified by its true value.  (Testing z > 1 + h
# instead rounds 1 + h and can put z in the linear piece, giving a negative loss.)
def ref_huber(z, h):
    """Paper eq. 41."""
    z = np.asarray(z, dtype=np.float64)
    u = 1 - z
    mid = np.abs(u) <= h
    v = np.where(u < -h, 0.0, np.where(mid, (u + h) ** 2 / (4 * h), u))
    d1 = np.where(u < -h, 0.0, np.where(mid, -(u + h) / (2 * h), -1.0))
    d2 = np.where(mid, 1 / (2 * h), 0.0)
    return v, d1, d2


def ref_smooth_hinge(z, h):
    """Paper eq. 38, u = 1 - z."""
    z = np.asarray(z, dtype=np.float64)
    u = 1 - z
    mid = np.abs(u) <= h
    vm = -u**4 / (16 * h**3) + 3 * u**2 / (8 * h) + u / 2 + 3 * h / 16
    d1m = -(-u**3 / (4 * h**3) + 3 * u / (4 * h) + 0.5)
    d2m = -3 * u**2 / (4 * h**3) + 3 / (4 * h)
    v = np.where(u < -h, 0.0, np.where(mid, vm, u))
    d1 = np.where(u < -h, 0.0, np.where(mid, d1m, -1.0))
    d2 = np.where(mid, d2m, 0.0)
    return v, d1, d2


def reference(name, z, h):
    if name == "logistic":
        return ref_logistic(z)
    if name == "huber":
        return ref_huber(z, h)
    return ref_smooth_hinge(z, h)


def breakpoints_and_neighbours(h):
    """z = 1 +- h exactly, one ulp either side, and a few tiny offsets."""
    pts = []
    for b in (1.0 - h, 1.0 + h):
        pts += [b, np.nextafter(b, -np.inf), np.nextafter(b, np.inf)]
        pts += [b + s * t for t in (1e-12, 1e-9, 1e-6) for s in (-1, 1)]
    return np.array(pts)


def grid(h):
    return np.concatenate([np.linspace(-6, 8, 2001), breakpoints_and_neighbours(h),
                           [0.0, -0.0, 1.0, 1 - h / 2, 1 + h / 2]])


# --------------------------------------------------------------------- tests
def test_registry_and_constants():
    assert set(LOSSES) == {"logistic", "huber", "smooth_hinge"}
    assert get_loss("logistic").curvature() == 0.25
    for h in HS:
        assert get_loss("huber").curvature(h) == pytest.approx(1 / (2 * h))
        assert get_loss("smooth_hinge").curvature(h) == pytest.approx(3 / (4 * h))
        # c scales as R^2, the gradient bound as R
        assert get_loss("huber").curvature(h, data_norm=2.0) == pytest.approx(4 / (2 * h))
    assert get_loss("logistic").gradient_bound(3.0) == 3.0
    with pytest.raises(ValueError, match="loss"):
        get_loss("hinge")


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("h", HS)
def test_values_match_closed_form(name, h):
    z = grid(h)
    v, d1, d2 = LOSSES[name].per_sample(z, h)
    rv, rd1, rd2 = reference(name, z, h)
    np.testing.assert_allclose(v, rv, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(d1, rd1, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(d2, rd2, rtol=1e-12, atol=1e-12 / h)


@pytest.mark.parametrize("name", ["huber", "smooth_hinge"])
@pytest.mark.parametrize("h", HS)
def test_breakpoints_exact(name, h):
    """At z = 1 + h the loss is 0 and at z = 1 - h it is 1 - z = h, from both sides."""
    lo = LOSSES[name]
    hi_b, lo_b = 1.0 + h, 1.0 - h
    for b, expect_v, expect_d1 in ((hi_b, 0.0, 0.0), (lo_b, 1.0 - lo_b, -1.0)):
        side = np.array([np.nextafter(b, -np.inf), b, np.nextafter(b, np.inf)])
        v, d1, d2 = lo.per_sample(side, h)
        scale = max(h, 1.0)
        np.testing.assert_allclose(v, expect_v, atol=1e-14 * scale)
        np.testing.assert_allclose(d1, expect_d1, atol=1e-12 * scale / h)
        # just outside the band the pieces are the linear / zero ones, exactly
    # one ulp outside the band: the zero / linear pieces, exactly.  (Below 1/2,
    # 1 - z rounds, so the band test may see u == h exactly; phi and phi' agree
    # there, phi'' of the Huber loss jumps, and either side's value is right.)
    v, d1, d2 = lo.per_sample(np.array([np.nextafter(hi_b, np.inf)]), h)
    assert v[0] == 0.0 and d1[0] == 0.0 and d2[0] == 0.0
    zlo = np.nextafter(lo_b, -np.inf)
    v, d1, d2 = lo.per_sample(np.array([zlo]), h)
    assert v[0] == 1.0 - zlo and d1[0] == -1.0
    assert d2[0] == 0.0 or (zlo < 0.5 and d2[0] == pytest.approx(lo.curvature(h)))
    # inside the band: the second derivative is the quadratic/quartic piece's
    v, d1, d2 = lo.per_sample(np.array([1.0]), h)
    assert d2[0] == pytest.approx(lo.curvature(h))


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("h", HS)
def test_derivatives_match_finite_differences(name, h):
    lo = LOSSES[name]
    bps = np.array([1 - h, 1 + h])
    z = np.linspace(-5, 7, 601)
    eps = 1e-6 * max(h, 1e-2)
    if name != "logistic":
        # central differences straddling a kink of phi'' are not meaningful for d2
        z = z[np.min(np.abs(z[:, None] - bps[None, :]), axis=1) > 10 * eps]
    v, d1, d2 = lo.per_sample(z, h)
    vp, d1p, _ = lo.per_sample(z + eps, h)
    vm, d1m, _ = lo.per_sample(z - eps, h)
    np.testing.assert_allclose(d1, (vp - vm) / (2 * eps), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(d2, (d1p - d1m) / (2 * eps), rtol=1e-5, atol=1e-6 / h)


@pytest.mark.parametrize("name", ["huber", "smooth_hinge"])
@pytest.mark.parametrize("h", HS)
def test_continuity_across_breakpoints(name, h):
    """phi and phi' are continuous (smooth_hinge also phi''), so the jump over one ulp is tiny."""
    lo = LOSSES[name]
    for b in (1 - h, 1 + h):
        a, c = np.nextafter(b, -np.inf), np.nextafter(b, np.inf)
        v, d1, d2 = lo.per_sample(np.array([a, c]), h)
        assert abs(v[0] - v[1]) < 1e-14 * max(1.0, h)
        assert abs(d1[0] - d1[1]) < 1e-12 / h
        if name == "smooth_hinge":
            assert abs(d2[0] - d2[1]) < 1e-10 / h


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("h", HS)
def test_bounds(name, h):
    """|phi'| <= 1 and 0 <= phi'' <= c, phi >= 0, phi convex and non-increasing."""
    lo = LOSSES[name]
    z = np.concatenate([grid(h), np.linspace(-1e4, 1e4, 4001)])
    v, d1, d2 = lo.per_sample(z, h)
    c = lo.curvature(h)
    # phi >= 0 up to rounding: the expanded quartic of smooth_hinge cancels to
    # about -eps * h one ulp inside z = 1 + h (factored form (u+h)^3 (3h-u) / 16h^3 would not)
    assert np.all(v >= -4 * np.finfo(float).eps * max(h, 1.0))
    assert np.all(np.abs(d1) <= 1.0)
    assert np.all(d1 <= 0)
    assert np.all(d2 >= 0)
    assert np.all(d2 <= c * (1 + 1e-12))
    order = np.argsort(z)
    assert np.all(np.diff(d1[order]) >= -1e-15)      # phi' non-decreasing: convex


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("h", [0.01, 0.5, 2.0])
def test_stable_for_large_margins(name, h):
    z = np.array([-1e4, -1e3, -745.2, -710.0, -50.0, 50.0, 710.0, 745.2, 1e3, 1e4,
                  -1e6, 1e6, -1e15, 1e15])
    v, d1, d2 = LOSSES[name].per_sample(z, h)
    for arr in (v, d1, d2):
        assert np.all(np.isfinite(arr))
    neg = z < 0
    # far on the wrong side every loss is linear, 1 - z or -z (logistic)
    expect = -z[neg] if name == "logistic" else 1 - z[neg]
    np.testing.assert_allclose(v[neg], expect, rtol=1e-15)
    np.testing.assert_array_equal(d1[neg], -1.0)
    assert np.all(d2[neg] >= 0) and np.all(d2[neg] < 1e-20)
    # far on the right side loss, slope and curvature vanish
    assert np.all(v[~neg] < 1e-20) and np.all(np.abs(d1[~neg]) < 1e-20)
    assert np.all(d2[~neg] < 1e-20)


def test_logistic_accuracy_moderate_margins():
    """log1p form: no cancellation for large positive z, where the loss is ~e^-z."""
    z = np.array([20.0, 30.0, 40.0, 700.0])
    v, d1, _ = LOSSES["logistic"].per_sample(z)
    np.testing.assert_allclose(v, np.log1p(np.exp(-z)), rtol=1e-14)
    np.testing.assert_allclose(d1, -np.exp(-z) / (1 + np.exp(-z)), rtol=1e-14)


def test_per_sample_accepts_lists_and_other_dtypes():
    v, d1, d2 = LOSSES["logistic"].per_sample([0, 1, 2])
    np.testing.assert_allclose(v, np.log1p(np.exp(-np.array([0.0, 1.0, 2.0]))))
    v32, _, _ = LOSSES["huber"].per_sample(np.array([0.5], dtype=np.float32), 0.5)
    assert v32.dtype == np.float64
