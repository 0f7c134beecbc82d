#!/usr/bin/env python3
"""Mutation test of dperm's privacy-critical code: does the test suite notice a wrong constant?

Each mutant below replaces one exact piece of source text (found wherever it lives under
dperm/, so the list survives files moving between folders) by a deliberately wrong one:
a sensitivity halved, a noise law changed, a slack dropped, a clip too loose. For each, the
privacy, mechanism, calibration, accountant, noise, release and design tests run against
the mutated tree; a mutant is KILLED only when tests FAIL (pytest exit code 1 with failed
tests).  An import or collection error, an internal error, no tests collected (exit codes
2-5) or a timeout is "NOT KILLED (error)": the suite did not show that a test notices the
mutation, so it counts against the kill rate like a survivor.  The source is restored after
each run (also on Ctrl-C). Run from the repository root, with dperm installed in editable mode
(`pip install --no-build-isolation -e .`) so that the mutated Python is what is imported:

    python tools/mutation_test.py            # default suite (pytest's 'not slow')
    python tools/mutation_test.py --slow     # the slow audits too
    python tools/mutation_test.py --only beta_add_remove_doubled,output_factor_halved
    python tools/mutation_test.py --only adassp_ridge_from_true_lambda_min \
        --files test_adassp.py                # a quick run over some test files only

Prints one line per mutant and the kill rate; exits 1 if any mutant survives.
"""
import argparse
import pathlib
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: (name, what it breaks, exact source text, replacement)
MUTANTS = [
    ("output_sens_replace_halved", "output perturbation: replace-one sensitivity 2R -> R",
     "factor = sensitivity_factor(nb) * (1.0 if lo is not None else SOFTMAX_GRADIENT_FACTOR)",
     "factor = (1.0 if nb == 'replace_one' else sensitivity_factor(nb)) "
     "* (1.0 if lo is not None else SOFTMAX_GRADIENT_FACTOR)"),
    ("output_factor_halved", "output perturbation: add/remove sensitivity R -> R/2",
     "factor = sensitivity_factor(nb) * (1.0 if lo is not None else SOFTMAX_GRADIENT_FACTOR)",
     "factor = (sensitivity_factor(nb) if nb == 'replace_one' else 0.5) "
     "* (1.0 if lo is not None else SOFTMAX_GRADIENT_FACTOR)"),
    ("output_multinomial_no_sqrt2", "output perturbation: multinomial Frobenius factor dropped",
     "factor = sensitivity_factor(nb) * (1.0 if lo is not None else SOFTMAX_GRADIENT_FACTOR)",
     "factor = sensitivity_factor(nb) * (1.0 if lo is not None else 1.0)"),
    ("output_constants_halved", "output_perturbation_constants: sensitivity factor dropped",
     "return n * alpha * epsilon / (sensitivity_factor(neighbouring) * gradient_bound)",
     "return n * alpha * epsilon / (1.0 * gradient_bound)"),
    ("beta_replace_doubled", "objective perturbation: replace-one beta = eps'/R (noise halved)",
     "beta = eps_p / (sensitivity_factor(neighbouring) * gradient_bound)",
     "beta = eps_p / ((1.0 if replace else sensitivity_factor(neighbouring)) * gradient_bound)"),
    ("beta_add_remove_doubled", "objective perturbation: add/remove beta = 2 eps'/R",
     "beta = eps_p / (sensitivity_factor(neighbouring) * gradient_bound)",
     "beta = eps_p / ((sensitivity_factor(neighbouring) if replace else 0.5) * gradient_bound)"),
    ("sensitivity_factor_add_remove_halved", "neighbouring: the add/remove factor 1 -> 1/2",
     'return 2.0 if neighbouring == "replace_one" else 1.0',
     'return 2.0 if neighbouring == "replace_one" else 0.5'),
    ("jacobian_slack_once", "objective perturbation: replace-one slack log(1+q) for log(1+q)^2",
     "eps_p = epsilon - (np.log1p(2.0 * q + q * q) if replace else np.log1p(q))",
     "eps_p = epsilon - (np.log1p(q) if replace else np.log1p(q))"),
    ("jacobian_slack_dropped", "objective perturbation: no Jacobian slack at all",
     "eps_p = epsilon - (np.log1p(2.0 * q + q * q) if replace else np.log1p(q))",
     "eps_p = epsilon - (0.0 if replace else 0.0)"),
    ("delta_branch_denominator", "objective perturbation: Delta from e^{eps/2} - 1, not e^{eps/4} - 1",
     "denom = np.expm1(epsilon / 4.0) if replace else np.expm1(epsilon / 2.0)",
     "denom = np.expm1(epsilon / 2.0) if replace else np.expm1(epsilon / 2.0)"),
    ("logistic_curvature_halved", "losses: logistic curvature bound 1/4 -> 1/8",
     "def unit_curvature(self, h: float = 0.5) -> float:\n        return 0.25",
     "def unit_curvature(self, h: float = 0.5) -> float:\n        return 0.125"),
    ("noise_norm_laplace", "noise: ||b|| ~ |Laplace| (shape 1) instead of Gamma(d)",
     "radius = rng.gamma(shape=d, scale=1.0, size=size)",
     "radius = rng.gamma(shape=1, scale=1.0, size=size)"),
    ("noise_direction_unnormalised", "noise: the direction not normalised",
     "return direction / nrm * radius[..., None]", "return direction * radius[..., None]"),
    ("grid_rounding_term_dropped", "exact noise: sqrt(d) g of the grid rounding not added",
     "x = sensitivity + math.sqrt(d) * float(g)", "x = sensitivity + 0.0 * float(g)"),
    ("analytic_gaussian_loose", "calibration: analytic Gaussian accepts 10x delta",
     "return _smallest_sigma(lambda sg: gaussian_delta(eps, s, sg) <= dlt, guess)",
     "return _smallest_sigma(lambda sg: gaussian_delta(eps, s, sg) <= 10 * dlt, guess)"),
    ("amp_shift_ignores_delta", "AMP: the output shift tol/(Lambda + Delta) halved",
     "shift = gt / (al + obj.extra_l2)", "shift = 0.5 * gt / (al + obj.extra_l2)"),
    ("gaussian_event_room", "accountant: GaussianEvent accepts a claim at half the true delta",
     "if true_delta > self.delta:", "if true_delta > 2 * self.delta:"),
    ("pure_composition_max", "accountant: pure epsilons composed by max, not sum",
     "eps = sum(e.epsilon * c for e, c in events.items())",
     "eps = max(e.epsilon for e, c in events.items())"),
    # (rows clipped to 2R in apply_norm_bound's copying path is an equivalent mutant: its
    # float-rounding fix-up rescales any row still above R, so that path cannot be broken
    # by this one line; the kernels' path below, used by the estimator, can)
    ("clip_factor_too_loose", "validation: bound_rows lets rows reach 2R",
     "factor[over] = rx / base[over] * FACTOR_MARGIN",
     "factor[over] = 2.0 * rx / base[over] * FACTOR_MARGIN"),
    ("x_radius_ignores_constant", "design: the intercept column's radius not subtracted",
     "r2 = (data_norm / self.scale) ** 2 - (self.constant or 0.0) ** 2",
     "r2 = (data_norm / self.scale) ** 2"),
    ("exponential_mechanism_eps", "tuning: exponential mechanism with eps instead of eps/2",
     "w = np.exp(-(epsilon / (2.0 * sensitivity)) * (s - s.min()))",
     "w = np.exp(-(epsilon / (1.0 * sensitivity)) * (s - s.min()))"),
    ("adassp_xtx_frobenius_no_sqrt_m", "AdaSSP: X^T X sensitivity sqrt(m) R^2 -> R^2",
     "return r * r, math.sqrt(m) * r * r, m * r * b", "return r * r, r * r, m * r * b"),
    ("adassp_xty_factor_dropped", "AdaSSP: X^T y sensitivity m R B -> R B",
     "return r * r, math.sqrt(m) * r * r, m * r * b",
     "return r * r, math.sqrt(m) * r * r, r * b"),
    ("adassp_lambda_min_halved", "AdaSSP: lambda_min sensitivity R^2 -> R^2 / 2",
     "return r * r, math.sqrt(m) * r * r, m * r * b",
     "return 0.5 * r * r, math.sqrt(m) * r * r, m * r * b"),
    ("adassp_grid_slack_dropped", "AdaSSP: the grid rounding not taken from the budget",
     "a_nom = a - math.sqrt(coords) * 2.0 ** -_BITS", "a_nom = a"),
    ("adassp_split_unnormalised", "AdaSSP: split shares not normalised to sum 1",
     "return tuple(float(v) for v in w / w.sum())", "return tuple(float(v) for v in w)"),
    ("adassp_offdiag_noise_halved", "AdaSSP: off-diagonal noise sigma/2, not sigma/sqrt(2)",
     "off = _release(G[..., iu[0], iu[1]], sigma / math.sqrt(2.0), rng)",
     "off = _release(G[..., iu[0], iu[1]], sigma / 2.0, rng)"),
    ("adassp_xty_noise_quartered", "AdaSSP: X^T y released with sigma / 4",
     "xty_noisy = _release(np.asarray(xty, dtype=np.float64), cal.sigma_xty, rng)",
     "xty_noisy = _release(np.asarray(xty, dtype=np.float64), cal.sigma_xty / 4, rng)"),
    ("adassp_event_rdp_halved", "AdaSSP: accountant event with half the RDP curve",
     "tuple(orders / (2.0 * nm * nm)))", "tuple(orders / (4.0 * nm * nm)))"),
    # the regression loss's constants (issue 22; docs/privacy_analysis.md, section 12)
    ("pseudo_huber_lipschitz_one", "losses: pseudo-Huber |rho'| <= h taken as <= 1",
     "def lipschitz(self, h: float = 0.5) -> float:\n        return float(h)",
     "def lipschitz(self, h: float = 0.5) -> float:\n        return 1.0"),
    ("pseudo_huber_curvature_halved", "losses: pseudo-Huber curvature bound 1 -> 1/2",
     "        return float(h)\n\n    def unit_curvature(self, h: float = 0.5) -> float:\n"
     "        return 1.0",
     "        return float(h)\n\n    def unit_curvature(self, h: float = 0.5) -> float:\n"
     "        return 0.5"),
    ("pseudo_huber_one_signed", "losses: pseudo-Huber's two-signed rho' declared one-signed",
     '    regression = True\n    nonincreasing = False',
     '    regression = True\n    nonincreasing = True'),
    ("mechanisms_gradient_bound_R", "mechanisms: one row's gradient bound R for every loss",
     "return lo.gradient_bound(R, h) if lo is not None else R",
     "return R"),
    ("output_sens_ignores_loss", "output perturbation: sensitivity with R, not the loss's L",
     "L = _gradient_bound(lo, h, R)\n    sens = factor * L",
     "L = R\n    sens = factor * L"),
    ("objective_ignores_loss_bound", "objective perturbation: beta and sigma with R, not L",
     "L = _gradient_bound(lo, h, R)\n    tol_used",
     "L = R\n    tol_used"),
    ("accountant_regression_bound_R", "privacy_events: a regression record's RDP curve with R",
     "gb = record[\"data_norm\"] if lo is None else lo.gradient_bound(",
     "gb = record[\"data_norm\"] if True else lo.gradient_bound("),
    ("label_clip_loose", "validation: targets clipped to 2B instead of B",
     "np.clip(yf, -label_bound, label_bound)",
     "np.clip(yf, -2 * label_bound, 2 * label_bound)"),
    ("unconverged_output_released", "output perturbation: a non-converged minimiser released",
     "    if not np.all(res.converged):\n        # the sensitivity 2R/(n Lambda) bounds",
     "    if False:\n        # the sensitivity 2R/(n Lambda) bounds"),
    # the (epsilon, delta) steps (dperm/privacy/gaussian_release.py)
    ("gaussian_objective_sigma_halved", "Gaussian objective perturbation: b drawn with sigma / 2",
     "b = rng.standard_normal((alphas.size, n_draws, dim)) * sig[:, None, None]",
     "b = rng.standard_normal((alphas.size, n_draws, dim)) * (0.5 * sig[:, None, None])"),
    ("gaussian_output_delta_loose", "Gaussian output perturbation: sigma calibrated for 10x delta",
     "lambda s: calibration.analytic_gaussian_sigma(epsilon, delta, s),",
     "lambda s: calibration.analytic_gaussian_sigma(epsilon, 10 * delta, s),"),
    ("amp_output_epsilon_doubled", "AMP: the output noise calibrated for twice its epsilon",
     "calibration.analytic_gaussian_sigma(cc.epsilon_output,",
     "calibration.analytic_gaussian_sigma(2 * cc.epsilon_output,"),
    ("amp_tolerance_unchecked", "AMP: a fit above the gradient tolerance released",
     "    if not np.all(gn <= tol):          # (a NaN norm is refused too)",
     "    if False:          # (a NaN norm is refused too)"),
    ("gaussian_calibration_one_signed", "Gaussian objective: the one-signed bound for every loss",
     "nonincreasing_loss=lo is not None and lo.nonincreasing)\n        if perturbation",
     "nonincreasing_loss=True)\n        if perturbation"),
    ("quantile_em_eps_doubled", "private bounds: exp(-eps err) instead of exp(-eps err / 2)",
     "_EM_DIVISOR = 2.0", "_EM_DIVISOR = 1.0"),
    ("rank_sensitivity_halved", "private bounds: rank sensitivity 1 -> 1/2",
     "RANK_SENSITIVITY = 1.0", "RANK_SENSITIVITY = 0.5"),
    ("adassp_norm_check_against_one", "AdaSSP: rows checked against 1, not data_norm",
     "if np.any(norms > data_norm):", "if np.any(norms > 1.0):"),
    ("adassp_norm_check_against_square", "AdaSSP: rows checked against data_norm^2",
     "if np.any(norms > data_norm):", "if np.any(norms > data_norm ** 2):"),
    ("adassp_ridge_from_true_lambda_min", "AdaSSP: the ridge from the true lambda_min",
     "lam_low = max(lam_noisy - cal.shift, 0.0)",
     "lam_low = max(_statistics(Xa, ya)[0] - cal.shift, 0.0)"),
    ("row_norm_overflow", "row norms: a sum of squares that overflows left at inf",
     "out = np.sqrt(out)\n    big = np.flatnonzero(np.isinf(out))",
     "out = np.sqrt(out)\n    big = np.flatnonzero(np.isinf(out) & False)"),
    ("row_norm_limit_dropped", "norms: rows too large to clip in float64 not refused",
     "bad = np.flatnonzero(norms > MAX_ROW_NORM)", "bad = np.flatnonzero(norms > np.inf)"),
    ("unconverged_objective_released", "objective perturbation: a non-converged minimiser released",
     "        _require_exact_minimiser(res, tol_used)\n",
     "        pass\n"),
    ("dataframe_inf_clipped", "schema: an infinite cell clipped to the public range",
     "bad = np.flatnonzero(np.isinf(out))\n        if bad.size:\n            i = int(bad[0])",
     "bad = np.flatnonzero(np.isinf(out) & False)\n        if bad.size:\n            i = int(bad[0])"),
    ("quantile_no_split_over_columns", "private bounds: epsilon not split over the columns",
     "eps_col = epsilon / len(hists)", "eps_col = epsilon"),
    ("quantile_flat_prior", "private bounds: no prior for narrow intervals (ties drift)",
     "_WIDTH_PRIOR = 0.15", "_WIDTH_PRIOR = 0.0"),
    ("quantile_no_knee", "private bounds: the steep prior all the way (wide columns collapse)",
     "_WIDTH_KNEE = 200", "_WIDTH_KNEE = 10 ** 6"),
    ("quantile_flat_far_prior", "private bounds: a flat prior beyond the knee",
     "_WIDTH_PRIOR_FAR = 0.03", "_WIDTH_PRIOR_FAR = 0.0"),
    ("quantile_sampler_knee_off_by_one", "private bounds sampler: the knee one step late "
     "in the marginal (the law is no longer the exponential mechanism's)",
     "edge = i + self._knee - 1", "edge = i + self._knee"),
    ("quantile_sampler_far_offset", "private bounds sampler: the far part's offset with the "
     "near slope", "+ (w_far - w) * knee + w_far * i", "+ (w_far - w) * knee + w * i"),
    ("quantile_sampler_conditional_prior_shift", "private bounds sampler: the high end's "
     "conditional with the prior one step off",
     "row[i:] = width_log_prior(np.arange(1, self.K - i + 1)",
     "row[i:] = width_log_prior(np.arange(0, self.K - i)"),
    ("quantile_sampler_dominated_range", "private bounds sampler: the range where the low "
     "end's error dominates starts one step late",
     'left = np.searchsorted(-e[: m + 1], -level, side="left")',
     'left = np.searchsorted(-e[: m + 1], -level, side="left") + 1'),
    ("selection_run_factor", "Lambda selection: best of logarithmic runs charged as 1 run",
     '_RUN_FACTORS = {"logarithmic": 2.0', '_RUN_FACTORS = {"logarithmic": 1.0'),
    ("selection_score_noise", "Lambda selection: score noise at twice the score's epsilon",
     "rng.laplace(0.0, sensitivity / eps_score)", "rng.laplace(0.0, 0.5 * sensitivity / eps_score)"),
    ("selection_regression_sensitivity", "Lambda selection: a regression score's sensitivity B (not 2 B)",
     "return _oracle.clipped_abs_error(est, X, y, c - B, c + B), 2.0 * B",
     "return _oracle.clipped_abs_error(est, X, y, c - B, c + B), 1.0 * B"),
    ("selection_refit_full_epsilon", "Lambda selection: the refit charged as if it had all of epsilon",
     "final = clone(base).set_params(epsilon=eps - eps_select, accountant=None)",
     "final = clone(base).set_params(epsilon=eps, accountant=None)"),
    ("selection_regression_unclipped_label", "Lambda selection: the regression score's labels not clipped",
     "np.clip(np.asarray(y, dtype=np.float64), low, high)", "np.asarray(y, dtype=np.float64)"),
]

#: the test files a privacy mutant must fail (found by name anywhere under tests/)
TEST_FILES = ("test_privacy_whitebox.py", "test_privacy_blackbox.py", "test_privacy_gaussian.py",
              "test_privacy_add_remove.py", "test_mechanisms.py", "test_calibration.py",
              "test_accountant.py", "test_noise.py", "test_exact_noise.py", "test_release.py",
              "test_design.py", "test_tuning.py", "test_losses.py", "test_multinomial.py",
              "test_quantiles.py", "test_quantiles_sampler.py", "test_adassp.py",
              "test_privacy_regression.py",
              "test_release_regression.py", "test_regressor.py", "test_bounds_separation.py",
              "test_norms.py", "test_nonfinite.py", "test_selection.py")


def locate(text):
    """The one file under dperm/ holding `text` exactly once (an error otherwise)."""
    hits = [(p, p.read_text().count(text)) for p in (ROOT / "dperm").rglob("*.py")]
    hits = [(p, k) for p, k in hits if k]
    if len(hits) != 1 or hits[0][1] != 1:
        where = ", ".join(f"{p.relative_to(ROOT)} x{k}" for p, k in hits) or "nowhere"
        raise SystemExit(f"mutant text must occur exactly once under dperm/, found: {where}\n"
                         f"  {text!r}")
    return hits[0][0]


def tests(names=TEST_FILES):
    found = {}
    for p in sorted((ROOT / "tests").rglob("test_*.py")):
        found.setdefault(p.name, p)
    return [str(found[n]) for n in names if n in found]


#: pytest's exit codes (pytest.ExitCode): only TESTS_FAILED shows a test noticing a mutant
TESTS_FAILED = 1


def verdict(returncode, output):
    """"killed" only for failed tests; "error" for anything else that is not a pass
    (interrupted by a collection or import error, internal error, usage error, no tests)."""
    if returncode == 0:
        return "survived"
    if returncode == TESTS_FAILED and re.search(r"\b\d+ failed\b", output):
        return "killed"
    return "error"


def run_one(name, old, new, slow, timeout, files=TEST_FILES):
    path = locate(old)
    src = path.read_text()
    path.write_text(src.replace(old, new))
    try:
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
               "-W", "ignore"] + (["-m", ""] if slow else []) + tests(files)
        t0 = time.perf_counter()
        try:
            r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
            last = (r.stdout.strip().splitlines() or [""])[-1]
            result = verdict(r.returncode, r.stdout[-2000:])
            if result == "error":
                last = f"pytest exit code {r.returncode}: {last}"
        except subprocess.TimeoutExpired:
            result, last = "error", f"timed out after {timeout} s"
        return result, time.perf_counter() - t0, last, path.relative_to(ROOT)
    finally:
        path.write_text(src)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--slow", action="store_true", help="run the slow audits too")
    ap.add_argument("--only", default="", help="comma-separated mutant names")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per mutant")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--files", default="", help="comma-separated test file names to run "
                    "instead of the default list (a quicker, partial check)")
    args = ap.parse_args(argv)
    files = tuple(f for f in args.files.split(",") if f) or TEST_FILES
    chosen = [m for m in MUTANTS if not args.only or m[0] in args.only.split(",")]
    if args.list:
        for name, what, old, _ in chosen:
            print(f"{name:<32} {locate(old).relative_to(ROOT)}: {what}")
        return 0
    for _, _, old, _ in chosen:          # fail fast on a stale mutant, before any run
        locate(old)
    label = {"killed": "KILLED            ", "survived": "SURVIVED          ",
             "error": "NOT KILLED (error)"}
    counts = {"killed": 0, "survived": 0, "error": 0}
    for name, what, old, new in chosen:
        result, sec, last, path = run_one(name, old, new, args.slow, args.timeout, files)
        counts[result] += 1
        print(f"{label[result]} {name:<34} {sec:6.1f} s  {path}: {what}  [{last}]", flush=True)
    killed = counts["killed"]
    print(f"kill rate: {killed}/{len(chosen)} = {killed / max(len(chosen), 1):.0%} "
          f"({counts['survived']} survived, {counts['error']} not killed by an error or a "
          f"timeout)")
    return 0 if killed == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
