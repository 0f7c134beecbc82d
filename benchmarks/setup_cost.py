"""What a one-shot call costs beyond its pass: dperm.optim.erm.objective / hessian_vector on CSR.

    python benchmarks/setup_cost.py [--n 200000] [--reps 15]

make_onehot_classification(n, 400, 30) float64 CSR, logistic, one thread.  Times (CPU
seconds of this process, best of --reps) of: the bare compiled pass
(dperm._core._objective.value_grad / hess_vec on a prepared Data), the set-up's one
read of the entries (csr_scan), the whole validation (dperm.data.validation.check_X),
and the one-shot calls dperm.optim.erm.objective and dperm.optim.erm.hessian_vector; each also in
passes (its time / the bare value-and-gradient pass).
"""
import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from _timing import timed  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    from dperm import erm
    from dperm._core import _objective as ob
    from dperm.data.validation import check_X
    from dperm.datasets import make_onehot_classification

    X, y = make_onehot_classification(args.n, 400, 30, random_state=0)
    s = np.asarray(y, dtype=np.float64)
    w = np.random.default_rng(0).normal(scale=0.1, size=(1, X.shape[1]))
    v = np.random.default_rng(1).normal(size=(1, X.shape[1]))
    D = ob.Data(X, s)
    l2 = np.full(1, 1e-4)

    def t(fn):
        return timed(fn, args.reps, warmup=1, clock=time.process_time)[0]

    rows = [
        ("compiled value+gradient pass", t(lambda: ob.value_grad(D, w, l2, None, 0, 0.0, 1))),
        ("compiled Hessian-vector pass", t(lambda: ob.hess_vec(D, w, v, l2, 0, 0.0, 1))),
        ("set-up read (csr_scan)", t(lambda: ob.csr_scan(X.data, X.indices, X.indptr, X.shape[1]))),
        ("check_X (whole validation)", t(lambda: check_X(X, accept_sparse=True))),
        ("erm.objective", t(lambda: erm.objective(X, y, w[0], alpha=1e-4, n_threads=1))),
        ("erm.hessian_vector", t(lambda: erm.hessian_vector(X, y, w[0], v[0], alpha=1e-4,
                                                            n_threads=1))),
    ]
    base = rows[0][1]
    print(f"n = {args.n:,}, nnz = {X.nnz:,}; CPU time, best of {args.reps}\n")
    print("| step | ms | in value+gradient passes |")
    print("|---|---:|---:|")
    for name, sec in rows:
        print(f"| {name} | {sec * 1e3:.2f} | {sec / base:.2f} |")


if __name__ == "__main__":
    main()
