"""The multinomial (softmax) objective: compiled pass against the numpy row-block path.

    python benchmarks/softmax_pass.py [--reps 7] [--threads 1]

One value + gradient pass of dperm.optim.softmax.multinomial_value_grad on dense
KDDCup99 five-class rows (public preprocessing, 56,000 x 122, K = 5; dense and as CSR)
and on synthetic 200,000 x 100 rows with K = 10; side by side in one run, min over --reps: the compiled
pass (dperm._core._objective.softmax_sums, the default for dense rows), the numpy
path it replaced (BLAS or scipy.sparse products per row block), and the binary
logistic pass (erm.objective) over the same rows for K problems, the yardstick: the
softmax pass does the same two products plus a softmax per row.  Then a whole
(epsilon = 1, delta = 1/n^2) PrivateLinearClassifier fit on the dense KDD rows each way.
"""
import argparse
import time
import warnings

import numpy as np
from _timing import timed

from dperm import PrivateLinearClassifier
from dperm.optim import erm
from dperm.optim import softmax as _multinomial


def best(fn, reps):
    return timed(fn, reps, warmup=1)[0]


def numpy_path():
    """Context: the softmax objective's data term is the numpy row-block reference of the
    tests (tests/**/softmax_reference.py), the path the compiled pass replaced."""
    import pathlib
    import sys

    tests = pathlib.Path(__file__).resolve().parents[1] / "tests"
    sys.path.insert(0, str(next(tests.rglob("softmax_reference.py")).parent))
    import softmax_reference

    class Ctx:
        def __enter__(self):
            self.saved = _multinomial._data_term
            _multinomial._data_term = softmax_reference.data_term

        def __exit__(self, *exc):
            _multinomial._data_term = self.saved
    return Ctx()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    from dperm.datasets import load_kddcup99

    Xk, yk = load_kddcup99("public", n_samples=70000, random_state=0, target="five_class")
    Xk, yk = np.ascontiguousarray(Xk[:56000]), np.asarray(yk[:56000])
    rng = np.random.default_rng(0)
    Xs = rng.standard_normal((200_000, 100)) / 15.0
    ys = rng.integers(0, 10, 200_000)
    nt = args.threads
    print(f"one value + gradient pass, {nt} thread(s), min of {args.reps}; seconds\n")
    print("| data | K | compiled | numpy path | numpy / compiled | binary pass, K problems |")
    print("|---|---|---|---|---|---|")
    import scipy.sparse as sp

    Xkc = sp.csr_matrix(Xk)
    cases = (("KDDCup99 56,000 x 122", Xk, yk),
             (f"KDDCup99 as CSR ({Xkc.nnz / Xkc.shape[0]:.1f} nnz/row)", Xkc, yk),
             ("synthetic 200,000 x 100", Xs, ys))
    for name, X, y in cases:
        K = int(y.max()) + 1
        W = rng.standard_normal((K, X.shape[1])) * 0.3
        t_c = best(lambda: _multinomial.multinomial_value_grad(X, y, W, 1e-4, n_threads=nt),
                   args.reps)
        with numpy_path():
            t_n = best(lambda: _multinomial.multinomial_value_grad(X, y, W, 1e-4, n_threads=nt),
                       args.reps)
        yb = np.where(y == 0, 1.0, -1.0)
        t_b = best(lambda: erm.objective(X, yb, W, alpha=np.full(K, 1e-4), n_threads=nt),
                   args.reps)
        print(f"| {name} | {K} | {t_c:.4f} | {t_n:.4f} | {t_n / t_c:.1f} | {t_b:.4f} |")
    warnings.simplefilter("ignore")
    n = Xk.shape[0]
    fits = {}
    for label, ctx in (("compiled", None), ("numpy path", numpy_path())):
        clf = PrivateLinearClassifier(epsilon=1.0, delta=1.0 / n**2, classes=list(range(5)),
                                      random_state=0, n_threads=nt)
        if ctx:
            with ctx:
                t0 = time.perf_counter()
                clf.fit(Xk, yk)
                fits[label] = time.perf_counter() - t0
        else:
            t0 = time.perf_counter()
            clf.fit(Xk, yk)
            fits[label] = time.perf_counter() - t0
        fits[label + " iterations"] = clf.fit_diagnostics_["n_iter"]
    print(f"\nwhole multinomial fit (KDD, epsilon 1, delta 1/n^2, {nt} thread(s)): compiled "
          f"{fits['compiled']:.2f} s ({fits['compiled iterations']} iterations), numpy path "
          f"{fits['numpy path']:.2f} s ({fits['numpy path iterations']} iterations): "
          f"{fits['numpy path'] / fits['compiled']:.1f}x")


if __name__ == "__main__":
    main()
