"""Benchmarks of issue 23's paths and of the command line's CSV reader.

* the one-shot erm.objective on CSR input: the set-up (one compiled read for finiteness,
  column range and canonical order) plus one pass;
* one pass of the Dask backend on an in-process LocalCluster (4 single-threaded workers,
  one small block each), the flat gather against the tree reduction: overhead only;
* the CSV reader: read, missing values, encoding and labels of a 250,000-row
  census-shaped file with a public schema (written once in setup).
"""
import os
import tempfile
import warnings

import numpy as np

from dperm.optim import erm


class SparseOneShot:
    """erm.objective on fresh CSR input (validation included), against the bare pass
    on the prepared rows (the oracle reused)."""

    def setup(self):
        from dperm.datasets import make_onehot_classification

        self.X, self.y = make_onehot_classification(200_000, 400, 30, random_state=0)
        self.w = np.zeros(self.X.shape[1])

    def time_objective_one_shot(self):
        erm.objective(self.X, self.y, self.w, alpha=1e-4, n_threads=1)


class DaskPass:
    """One value + gradient pass of the Dask backend, flat gather or tree reduction."""

    params = (["flat", "tree"],)
    param_names = ["reduction"]
    timeout = 120

    def setup(self, reduction):
        try:
            import dask.array as da
            from distributed import Client, LocalCluster
        except ImportError as exc:
            raise NotImplementedError(f"needs dask and distributed: {exc}") from exc
        from dperm.data import dask_rows

        self.cluster = LocalCluster(n_workers=4, threads_per_worker=1, processes=False,
                                    dashboard_address=None)
        self.client = Client(self.cluster)
        rng = np.random.default_rng(0)
        X = rng.standard_normal((400, 100)) / 20
        y = np.where(rng.random(400) < 0.5, -1.0, 1.0)
        self.rows = dask_rows.as_rows(da.from_array(X, chunks=(100, -1)),
                                      da.from_array(y, chunks=100))
        self.W = rng.standard_normal((1, 100)) * 0.01
        self.l2 = np.full(1, 1e-3)
        self._old, dask_rows.REDUCTION = dask_rows.REDUCTION, reduction
        self.rows.value_grad(self.W, self.l2, None, 0, 0.5)      # shards built

    def teardown(self, reduction):
        from dperm.data import dask_rows

        dask_rows.REDUCTION = self._old
        self.client.close()
        self.cluster.close()

    def time_pass(self, reduction):
        self.rows.value_grad(self.W, self.l2, None, 0, 0.5)


class CSVRead:
    """The command line's reader on 250,000 rows (7 MB): read, missing values, encode."""

    timeout = 120

    def setup(self):
        from dperm.schema import PublicSchema

        rng = np.random.default_rng(0)
        n = 250_000
        self.dir = tempfile.mkdtemp()
        self.path = os.path.join(self.dir, "rows.csv")
        cols = {"age": rng.integers(17, 91, n), "hours": rng.integers(1, 100, n),
                "sex": rng.choice(["Female", "Male"], n),
                "work": rng.choice(["Private", "Self-emp", "Gov", "?"], n),
                "income": rng.choice(["<=50K", ">50K"], n)}
        with open(self.path, "w") as f:
            f.write(",".join(cols) + "\n")
            for row in zip(*cols.values()):
                f.write(",".join(map(str, row)) + "\n")
        self.schema = PublicSchema(numeric={"age": (17, 90), "hours": (1, 99)},
                                   categorical={"sex": ["Female", "Male"],
                                                "work": ["Private", "Self-emp", "Gov"]},
                                   fill={"work": "Private"}, label="income",
                                   classes=["<=50K", ">50K"])

    def teardown(self):
        os.remove(self.path)
        os.rmdir(self.dir)

    def time_read_and_encode(self):
        from dperm.cli import _io

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = _io.read_csv(self.path)
            table, _ = _io.apply_missing(table, self.schema, label="income",
                                         classes=["<=50K", ">50K"])
            _io.encode_rows(table, self.schema)
            _io.encode_labels(table, "income", ["<=50K", ">50K"])
