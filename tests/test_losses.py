"""Per-sample losses against the closed forms of docs/specification.md ("Losses").

phi(z), phi'(z), phi''(z) come from the compiled kernels through
Loss.per_sample; the references below are written independently in numpy.
"""
import numpy as np
import pytest
from scipy.special import expit

from dperm.losses import LOSSES, REGRESSION_LOSSES, get_loss

#: the margin losses phi(y f.x) (the regression loss has its own tests below)
MARGIN = sorted(k for k, v in LOSSES.items() if not v.regression)

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
    assert set(LOSSES) == {"logistic", "huber", "smooth_hinge", "pseudo_huber"}
    assert REGRESSION_LOSSES == ("pseudo_huber",)
    assert get_loss("logistic").curvature() == 0.25
    for h in HS:
        assert get_loss("huber").curvature(h) == pytest.approx(1 / (2 * h))
        assert get_loss("smooth_hinge").curvature(h) == pytest.approx(3 / (4 * h))
        # c scales as R^2, the gradient bound as R
        assert get_loss("huber").curvature(h, data_norm=2.0) == pytest.approx(4 / (2 * h))
    assert get_loss("logistic").gradient_bound(3.0) == 3.0
    with pytest.raises(ValueError, match="loss"):
        get_loss("hinge")


# ------------------------------------------------------ one declaration per loss
def test_kernel_ids_are_the_declared_ones():
    """The compiled kernels' loss ids (_rows.h's enum, as _objective exports it) are the
    ones dperm/losses.py declares, name by name, and no more."""
    from dperm._core import _objective

    assert _objective.KERNEL_LOSS_IDS == {n: lo.kernel_id for n, lo in LOSSES.items()}
    assert _objective.N_KERNEL_LOSSES == len(LOSSES)
    assert sorted(lo.kernel_id for lo in LOSSES.values()) == list(range(len(LOSSES)))
    for name, lo in LOSSES.items():
        assert lo.name == name and get_loss(name) is lo


@pytest.mark.parametrize("bad", [-1, 4, 7, 2**31 - 1])
def test_unknown_kernel_id_is_refused_by_every_entry_point(bad):
    """An id no loss declares is an error at the Python entry points of the kernels (it
    used to run the smoothed hinge's code, with no error)."""
    from dperm._core import _lbfgs, _objective

    z = np.array([0.5, 1.0, 2.0])
    X = np.array([[1.0, 0.5], [0.2, -0.3], [0.0, 1.0], [-0.5, 0.5]])
    s = np.array([1.0, -1.0, 1.0, -1.0])
    D = _objective.Data(X, s)
    W = np.zeros((1, 2))
    l2 = np.ones(1)
    calls = [
        lambda: _objective.per_sample(bad, z, 0.5),
        lambda: _objective.value_grad(D, W, l2, None, bad, 0.5, 1),
        lambda: _objective.hess_vec(D, W, W.copy(), l2, bad, 0.5, 1),
        lambda: _objective.hessian(X, s, W, l2, bad, 0.5, 1),
        lambda: _lbfgs.lbfgs(D, bad, 0.5, W, l2, None, 1e-8, 10, 5, 1),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="not a kernel loss id.*logistic.*pseudo_huber"):
            call()


@pytest.mark.parametrize("bad", [-1, 4, 7])
def test_unknown_kernel_id_gives_nan_below_the_checks(bad):
    """Under the entry points' check, the C dispatchers (dperm_loss_vd / _d2) and the
    Cython one (_losses.pxd's loss_second) give NaN for an unknown id: never another
    loss's values."""
    from dperm._core import _objective

    z = np.linspace(-3.0, 3.0, 37)
    for out in _objective._per_sample_unchecked(bad, z, 0.5):
        assert np.all(np.isnan(out))
    for name, lo in LOSSES.items():       # the known ids, through the same path
        v, d1, d2, s2 = _objective._per_sample_unchecked(lo.kernel_id, z, 0.5)
        rv, rd1, rd2 = lo.per_sample(z, 0.5)
        assert np.array_equal(v, rv) and np.array_equal(d1, rd1) and np.array_equal(d2, rd2)
        np.testing.assert_allclose(s2, rd2, rtol=1e-12, atol=1e-14, err_msg=name)


def test_a_loss_declares_everything_or_is_refused():
    """A Loss subclass that leaves out an attribute is refused when it is defined; one
    that leaves out a bound cannot be made; an id the kernels lack is refused when the
    loss is evaluated; the registry refuses a name or an id declared twice."""
    from dperm.losses import Huber, Loss, _registry

    with pytest.raises(TypeError, match="kernel_id"):
        class NoId(Loss):                      # noqa: F841
            name = "no_id"
            uses_h = False

    class NoCurvature(Loss):
        name, kernel_id, uses_h = "no_curvature", 9, False

        def lipschitz(self, h=0.5):
            return 1.0

    with pytest.raises(TypeError, match="abstract"):
        NoCurvature()
    with pytest.raises(TypeError, match="abstract"):
        Loss()

    class NewLoss(NoCurvature):
        def unit_curvature(self, h=0.5):
            return 1.0

    with pytest.raises(ValueError, match="9 is not a kernel loss id"):
        NewLoss().per_sample([0.0])
    with pytest.raises(TypeError, match="declared twice"):
        _registry(Huber, Huber)

    class Twin(Huber):
        name = "twin"

    with pytest.raises(TypeError, match="declared twice"):
        _registry(Huber, Twin)
    with pytest.raises(AttributeError, match="immutable"):
        LOSSES["huber"].kernel_id = 2


def test_each_loss_declares_its_own_bounds():
    """The bounds come from each loss's own declaration (no name comparison with a
    fallback): every loss, at several h and R."""
    expect = {"logistic": (lambda h: 1.0, lambda h: 0.25),
              "huber": (lambda h: 1.0, lambda h: 1 / (2 * h)),
              "smooth_hinge": (lambda h: 1.0, lambda h: 3 / (4 * h)),
              "pseudo_huber": (lambda h: h, lambda h: 1.0)}
    assert set(expect) == set(LOSSES)
    for name, (lip, curv) in expect.items():
        lo = LOSSES[name]
        for h in HS:
            for R in (0.5, 1.0, 3.0):
                assert lo.lipschitz(h) == pytest.approx(lip(h), rel=1e-15)
                assert lo.curvature(h, R) == pytest.approx(curv(h) * R * R, rel=1e-15)
                assert lo.gradient_bound(R, h) == pytest.approx(lip(h) * R, rel=1e-15)
    with pytest.raises(ValueError, match="choose one of.*huber.*logistic"):
        get_loss("hinge")


@pytest.mark.parametrize("name", MARGIN)
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


@pytest.mark.parametrize("name", MARGIN)
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


@pytest.mark.parametrize("name", MARGIN)
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


@pytest.mark.parametrize("name", MARGIN)
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


# ------------------------------------------------------- the one home of the privacy constants
def test_softmax_constants_bound_the_softmax_row():
    """SOFTMAX_GRADIENT_FACTOR and softmax_curvature bound one row's softmax loss: the
    gradient (p - e_y) x^T has norm ||p - e_y|| ||x|| <= sqrt(2) R, and the trace of the
    Hessian block (diag(p) - p p^T) (x) x x^T is (1 - ||p||^2) ||x||^2 <= (1 - 1/K) R^2,
    with equality at p uniform."""
    from dperm.losses import SOFTMAX_GRADIENT_FACTOR, softmax_curvature

    rng = np.random.default_rng(0)
    R = 0.7
    for K in (3, 4, 10):
        for _ in range(200):
            z = rng.normal(size=K) * rng.choice([0.1, 1.0, 30.0])
            p = np.exp(z - z.max())
            p /= p.sum()
            x = rng.normal(size=5)
            x *= R * rng.uniform() ** 0.2 / np.linalg.norm(x)
            y = rng.integers(K)
            grad = np.outer(p - np.eye(K)[y], x)
            assert np.linalg.norm(grad) <= SOFTMAX_GRADIENT_FACTOR * R * (1 + 1e-12)
            trace = (1.0 - p @ p) * (x @ x)
            assert trace <= softmax_curvature(K, R) * (1 + 1e-12)
        p = np.full(K, 1.0 / K)
        assert (1.0 - p @ p) * R * R == pytest.approx(softmax_curvature(K, R), rel=1e-14)
    assert SOFTMAX_GRADIENT_FACTOR == np.sqrt(2.0)


def test_n_classes_rule():
    from dperm.losses import MULTINOMIAL_MIN_CLASSES, check_n_classes

    assert MULTINOMIAL_MIN_CLASSES == 3
    assert check_n_classes(2) == 2 and check_n_classes(np.int64(5)) == 5
    assert check_n_classes(3, mechanism=True) == 3
    for bad in (1, 2.0, True, "3", None):
        with pytest.raises(ValueError, match="n_classes"):
            check_n_classes(bad)
    with pytest.raises(ValueError, match="binary loss"):
        check_n_classes(2, mechanism=True)


def test_neighbouring_relations():
    from dperm.privacy.neighbouring import NEIGHBOURING, check_neighbouring, sensitivity_factor

    assert NEIGHBOURING == ("replace_one", "add_remove")
    assert sensitivity_factor("replace_one") == 2.0 and sensitivity_factor("add_remove") == 1.0
    assert check_neighbouring("add_remove") == "add_remove"
    with pytest.raises(ValueError, match="neighbouring"):
        check_neighbouring("swap")


def test_privacy_constants_defined_once():
    """The softmax curvature (1 - 1/K) R^2, the softmax gradient factor sqrt(2), the list
    of neighbouring relations and the replace_one factor 2 are written in their homes only
    (dperm/losses.py, dperm/privacy/neighbouring.py): every other module imports them."""
    import pathlib
    import re

    import dperm

    root = pathlib.Path(dperm.__file__).parent
    patterns = {
        r"1(\.0)? - 1(\.0)? / (K|k|n_classes)\b": "losses.py",
        r"\(\s*['\"]replace_one['\"],\s*['\"]add_remove['\"]\s*\)": "neighbouring.py",
        r"2\.0 if \w+ == ['\"]replace_one['\"]": "neighbouring.py",
        r"math\.sqrt\(2\.0\) \* a\b": "losses.py",
    }
    for path in root.rglob("*.py"):
        code = "\n".join(line.split("#")[0] for line in path.read_text().splitlines())
        for pat, home in patterns.items():
            if re.search(pat, code):
                assert path.name == home, (str(path.relative_to(root)), pat)


# --------------------------------------------------------------------- pseudo-Huber
PH = LOSSES["pseudo_huber"]


def _ph_reference(r, h):
    """rho, rho', rho'' of the pseudo-Huber loss in extended precision (numpy longdouble)."""
    r = np.asarray(r, dtype=np.longdouble)
    h = np.longdouble(h)
    t = r / h
    s = np.sqrt(1 + t * t)
    return (h * h * t * t / (s + 1), h * t / s, 1 / (s * s * s))


def test_pseudo_huber_declares_its_bounds():
    """gradient bound h R (not R: the margin losses' 1 would be wrong), curvature R^2,
    a two-signed derivative (the Gaussian calibration's one-signed bound must not apply)."""
    assert PH.regression and not PH.nonincreasing
    for h in HS:
        assert PH.lipschitz(h) == h
        assert PH.gradient_bound(3.0, h) == pytest.approx(3.0 * h)
        assert PH.curvature(h, 2.0) == pytest.approx(4.0)
    for name in MARGIN:
        assert LOSSES[name].lipschitz(0.3) == 1.0 and LOSSES[name].nonincreasing
        assert not LOSSES[name].regression
    with pytest.raises(ValueError, match="label_bound"):
        PH.value_at_zero(1.0)
    assert PH.value_at_zero(2.0, label_bound=3.0) == pytest.approx(4 * (np.sqrt(1 + 2.25) - 1))
    # a classifier asks for margin losses only, a regressor for regression losses only
    with pytest.raises(ValueError, match="loss"):
        get_loss("pseudo_huber", regression=False)
    with pytest.raises(ValueError, match="loss"):
        get_loss("logistic", regression=True)


@pytest.mark.parametrize("h", HS)
def test_pseudo_huber_bounds_held_and_attained(h):
    """|rho'| <= h and 0 <= rho'' <= 1 on a wide grid (rounding never crosses them), with
    rho'(r) -> +-h (attained to rounding far out) and rho''(0) = 1 exactly; the values
    match an extended-precision reference."""
    r = np.concatenate([np.linspace(-50 * h, 50 * h, 4001), [0.0, -0.0, 1e-300, h, -h],
                        np.geomspace(1e-8, 1e300, 200), -np.geomspace(1e-8, 1e300, 200)])
    v, d1, d2 = PH.per_sample(r, h)
    assert np.all(np.isfinite(v)) and np.all(v >= 0)
    assert np.all(np.abs(d1) <= PH.lipschitz(h))
    assert np.all((d2 >= 0) & (d2 <= PH.curvature(h)))
    rv, rd1, rd2 = _ph_reference(r, h)
    np.testing.assert_allclose(v, rv.astype(float), rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(d1, rd1.astype(float), rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(d2, rd2.astype(float), rtol=1e-12, atol=1e-300)
    # attained: the sup of |rho'| is h (reached far out), the sup of rho'' is 1 (at 0)
    _, d1, d2 = PH.per_sample(np.array([1e20 * h, -1e20 * h, 0.0]), h)
    assert d1[0] == h and d1[1] == -h and d2[2] == 1.0
    # NaN in, NaN out (the line search must see it)
    v, d1, d2 = PH.per_sample(np.array([np.nan]), h)
    assert np.isnan(v[0]) and np.isnan(d1[0]) and np.isnan(d2[0])


def test_pseudo_huber_derivatives_by_differences():
    """rho' and rho'' agree with central differences of rho (and of rho')."""
    h, r, e = 0.7, np.linspace(-5, 5, 101), 1e-6
    v, d1, d2 = PH.per_sample(r, h)
    vp, d1p, _ = PH.per_sample(r + e, h)
    vm, d1m, _ = PH.per_sample(r - e, h)
    np.testing.assert_allclose(d1, (vp - vm) / (2 * e), atol=1e-7)
    np.testing.assert_allclose(d2, (d1p - d1m) / (2 * e), atol=1e-7)
