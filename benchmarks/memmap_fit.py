"""Fit dperm from a memory-mapped .npy file and from RAM: time and anonymous memory.

    python benchmarks/memmap_fit.py [--rows 10000000] [--dir DIR] [--keep] [--json PATH]

1. Creates (if absent) DIR/X_<rows>x<cols>_float32.npy, a C-order float32
   array written through np.lib.format.open_memmap in chunks (default
   10,000,000 x 100, 4.0 GB; standard normal rows scaled by 0.8 / sqrt(d),
   rows over norm 1 pulled back to the unit sphere, so every row norm <= 1),
   and DIR/y_<rows>.npy with labels in {-1, +1} (float64, 80 MB at 10M rows)
   from a planted logistic model. DIR defaults to a new temporary directory.
   Files this run created are deleted at the end unless --keep; a file that
   was already there is reused and left alone.
2. In a fresh subprocess: imports dperm, loads y, opens X with
   np.load(path, mmap_mode="r"), measures the baseline anonymous memory
   (RssAnon in /proc/self/status), then runs
   dperm.optim.erm.minimize(X, y, loss="logistic", alpha=1e-4, tol=1e-10) while a
   background thread samples RssAnon every 20 ms (the solver runs without the
   GIL, so the sampler keeps running); reports the fit time and the peak
   RssAnon minus the baseline. File-backed pages of the map (RssFile) are
   page cache, reclaimable, and not counted.
3. The same in another fresh subprocess, with X = np.array(map) read into RAM
   before the baseline (so the 4 GB copy is in the baseline and the peak over
   baseline is what the solver itself allocates).

Targets: memmap peak anonymous memory < 500 MB over baseline; memmap time
within 1.3x of in-RAM. By default the file is in the page cache when the
memmap fit starts (it was just written or read); --cold asks the kernel to
drop this file's cached pages first (posix_fadvise DONTNEED), timing a read
from disk. --rows 1000000 for a quick development run (400 MB).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

CHUNK_ROWS = 250_000


# ------------------------------------------------------------------ memory sampling
def _status_kb(field):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


class RssAnonSampler(threading.Thread):
    """Peak RssAnon (and RssFile) of this process, sampled every `interval` seconds."""

    def __init__(self, interval=0.02):
        super().__init__(daemon=True)
        self.interval = interval
        self.peak_anon = self.peak_file = 0
        self.samples = 0
        self._halt = threading.Event()

    def sample(self):
        a, f = _status_kb("RssAnon"), _status_kb("RssFile")
        self.peak_anon = max(self.peak_anon, a)
        self.peak_file = max(self.peak_file, f)
        self.samples += 1

    def run(self):
        while not self._halt.is_set():
            self.sample()
            self._halt.wait(self.interval)

    def stop(self):
        self._halt.set()
        self.join()
        self.sample()


# ------------------------------------------------------------------ data
def make_files(xpath, ypath, rows, cols, seed=0):
    """Write X (float32, C order, rows norm <= 1) and y in chunks; never holds X in RAM."""
    rng0 = np.random.default_rng(seed)
    w = rng0.standard_normal(cols)
    w /= np.linalg.norm(w)
    X = np.lib.format.open_memmap(xpath, mode="w+", dtype=np.float32, shape=(rows, cols),
                                  fortran_order=False)
    y = np.empty(rows, dtype=np.float64)
    scale = 0.8 / np.sqrt(cols)
    for c, i0 in enumerate(range(0, rows, CHUNK_ROWS)):
        i1 = min(rows, i0 + CHUNK_ROWS)
        rng = np.random.default_rng([seed, c])
        B = rng.standard_normal((i1 - i0, cols), dtype=np.float32)
        B *= np.float32(scale)
        norms = np.sqrt(np.einsum("ij,ij->i", B, B, dtype=np.float64))
        over = norms > 1.0 - 1e-6  # leave room for float32 rounding
        B[over] *= ((1.0 - 1e-6) / norms[over]).astype(np.float32)[:, None]
        m = B.astype(np.float64) @ w * (4.0 * np.sqrt(cols))  # margin scale: Bayes error ~ 0.15
        y[i0:i1] = np.where(rng.random(i1 - i0) < 1.0 / (1.0 + np.exp(-m)), 1.0, -1.0)
        X[i0:i1] = B
    X.flush()
    del X
    np.save(ypath, y)


def drop_cache(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


# ------------------------------------------------------------------ child: one fit
def child(mode, xpath, ypath, alpha, tol, n_threads, reps, interval, out, estimator=False):
    import warnings

    import dperm
    import dperm.optim.erm as erm
    from dperm._core import _lbfgs, _objective  # noqa: F401  (load the compiled core now)

    y = np.load(ypath)
    Xmap = np.load(xpath, mmap_mode="r")
    X = np.array(Xmap) if mode == "ram" else Xmap
    time.sleep(0.1)
    baseline = _status_kb("RssAnon")
    sampler = RssAnonSampler(interval)
    sampler.start()
    times, res = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        if estimator:
            # the estimator's default path: objective perturbation, intercept column,
            # alpha="auto", rows checked against data_norm (no copy of X anywhere)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = dperm.PrivateLinearClassifier(epsilon=1.0, classes=[-1, 1], tol=tol,
                                                    n_threads=n_threads).fit(X, y)
            diag = est.fit_diagnostics_
            res = type("R", (), dict(coef=np.r_[est.coef_[0], est.intercept_],
                                     n_iter=diag["n_iter"], converged=diag["converged"],
                                     fun=float("nan"), grad_norm=diag["grad_norm"]))
        else:
            res = erm.minimize(X, y, loss="logistic", alpha=alpha, tol=tol, n_threads=n_threads)
        times.append(time.perf_counter() - t0)
    sampler.stop()
    np.save(out, np.asarray(res.coef))
    print(json.dumps({
        "mode": mode, "times_s": times, "time_s": float(np.median(times)),
        "baseline_anon_mb": baseline / 1024, "peak_anon_mb": sampler.peak_anon / 1024,
        "peak_anon_over_baseline_mb": (sampler.peak_anon - baseline) / 1024,
        "peak_file_mb": sampler.peak_file / 1024, "samples": sampler.samples,
        "n_iter": int(res.n_iter), "converged": bool(res.converged), "fun": float(res.fun),
        "grad_norm": float(res.grad_norm),
    }))


def run_child(mode, args, xpath, ypath, workdir):
    out = os.path.join(workdir, f"coef_{mode}.npy")
    cmd = [sys.executable] + (["-S"] if sys.flags.no_site else []) + [
        os.path.abspath(__file__), "--child", mode, "--x", xpath, "--y", ypath,
        "--alpha", repr(args.alpha), "--tol", repr(args.tol), "--reps", str(args.reps),
        "--interval", repr(args.interval), "--coef-out", out] + (
        ["--estimator"] if args.estimator else [])
    if args.n_threads is not None:
        cmd += ["--n-threads", str(args.n_threads)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit(f"{mode} fit failed (exit {p.returncode})")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    r["coef"] = np.load(out)
    os.remove(out)
    return r


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--cols", type=int, default=100)
    ap.add_argument("--dir", default=None, help="where the .npy files live (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the files this run created")
    ap.add_argument("--alpha", type=float, default=1e-4)
    ap.add_argument("--tol", type=float, default=1e-10, help="gradient-norm tolerance")
    ap.add_argument("--n-threads", type=int, default=None, help="dperm threads (default: all)")
    ap.add_argument("--reps", type=int, default=3, help="fits per subprocess (median time)")
    ap.add_argument("--interval", type=float, default=0.02, help="RssAnon sampling period (s)")
    ap.add_argument("--cold", action="store_true",
                    help="drop the file's page-cache pages before the memmap fit")
    ap.add_argument("--skip-ram", action="store_true", help="memmap fit only")
    ap.add_argument("--json", metavar="PATH")
    ap.add_argument("--estimator", action="store_true",
                    help="fit dperm.PrivateLinearClassifier(epsilon=1) (objective perturbation, "
                         "intercept, alpha='auto') instead of erm.minimize")
    # internal: the fit subprocess
    ap.add_argument("--child", choices=["memmap", "ram"], help=argparse.SUPPRESS)
    ap.add_argument("--x", help=argparse.SUPPRESS)
    ap.add_argument("--y", help=argparse.SUPPRESS)
    ap.add_argument("--coef-out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child, args.x, args.y, args.alpha, args.tol, args.n_threads,
                     args.reps, args.interval, args.coef_out, args.estimator)

    tmp = args.dir is None
    workdir = tempfile.mkdtemp(prefix="dperm_memmap_") if tmp else args.dir
    os.makedirs(workdir, exist_ok=True)
    xpath = os.path.join(workdir, f"X_{args.rows}x{args.cols}_float32.npy")
    ypath = os.path.join(workdir, f"y_{args.rows}.npy")
    created = []
    try:
        ok = False
        if os.path.exists(xpath) and os.path.exists(ypath):
            Xm = np.load(xpath, mmap_mode="r")
            ok = Xm.shape == (args.rows, args.cols) and Xm.dtype == np.float32 and Xm.flags.c_contiguous
            del Xm
        if ok:
            print(f"reusing {xpath}")
        else:
            gb = args.rows * args.cols * 4 / 1e9
            print(f"writing {xpath} ({args.rows:,} x {args.cols} float32, {gb:.2f} GB) ...", flush=True)
            created += [xpath, ypath]
            t0 = time.perf_counter()
            make_files(xpath, ypath, args.rows, args.cols)
            print(f"  written in {time.perf_counter() - t0:.1f} s", flush=True)
        if args.cold:
            drop_cache(xpath)
        nt = args.n_threads if args.n_threads is not None else len(os.sched_getaffinity(0))
        print(f"fitting logistic, alpha = {args.alpha:g}, tol = {args.tol:g}, n_threads = {nt}, "
              f"RssAnon sampled every {args.interval * 1e3:.0f} ms", flush=True)
        runs = [run_child("memmap", args, xpath, ypath, workdir)]
        if not args.skip_ram:
            runs.append(run_child("ram", args, xpath, ypath, workdir))
    finally:
        if not args.keep:
            for p in created:
                if os.path.exists(p):
                    os.remove(p)
            if tmp:
                shutil.rmtree(workdir, ignore_errors=True)
    if args.keep and created:
        print(f"kept {', '.join(created)}")

    print()
    print("| input | time (s) | iterations | converged | baseline RssAnon (MB) | "
          "peak RssAnon over baseline (MB) | peak RssFile (MB) | samples |")
    print("|---|---:|---:|---|---:|---:|---:|---:|")
    for r in runs:
        label = "np.load(mmap_mode='r')" + (" (cold)" if args.cold else "") \
            if r["mode"] == "memmap" else "np.array(map), in RAM"
        print(f"| {label} | {r['time_s']:.2f} | {r['n_iter']} | {r['converged']} | "
              f"{r['baseline_anon_mb']:.0f} | {r['peak_anon_over_baseline_mb']:.0f} | "
              f"{r['peak_file_mb']:.0f} | {r['samples']} |")
    summary = {"rows": args.rows, "cols": args.cols, "alpha": args.alpha, "tol": args.tol,
               "n_threads": nt, "cold": args.cold,
               "runs": [{k: v for k, v in r.items() if k != "coef"} for r in runs]}
    mm = runs[0]
    print()
    print(f"- memmap peak anonymous memory over baseline: {mm['peak_anon_over_baseline_mb']:.0f} MB "
          f"(target < 500 MB: {'MET' if mm['peak_anon_over_baseline_mb'] < 500 else 'MISSED'})")
    if len(runs) == 2:
        ram = runs[1]
        ratio = mm["time_s"] / ram["time_s"]
        diff = float(np.max(np.abs(mm["coef"] - ram["coef"])))
        summary.update(time_ratio_memmap_over_ram=ratio, coef_max_abs_diff=diff)
        print(f"- time memmap / in RAM: {ratio:.2f} (target <= 1.3: {'MET' if ratio <= 1.3 else 'MISSED'})")
        if args.estimator:
            print(f"- coefficients memmap vs RAM: max abs difference {diff:.1e} (two private "
                  "fits, two fresh noise draws: not expected to agree)")
        else:
            print(f"- coefficients memmap vs RAM: max abs difference {diff:.1e}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(summary, fh, indent=2)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
