"""
A fit on a Dask cluster
=======================

With ``pip install "dperm[dask]"``, the estimator's ``fit`` takes a ``dask.array`` chunked
by rows. The rows stay on the workers; every solver iteration sends the coefficients out
and gets sums back; the noise is drawn in this process. Here a small in-process cluster
(``LocalCluster(processes=False)``) holds Adult's training rows in four blocks, and the
model fitted there is compared with the one fitted in memory from the same seed.

(A seed makes the noise reproducible, which voids the guarantee: dperm warns with a
``PrivacyLeakWarning``. It is used here only to show that the two fits agree; a release
uses ``random_state=None``, the default.)
"""
import warnings

import dask.array as da
import matplotlib.pyplot as plt
import numpy as np
from distributed import Client, LocalCluster

import dperm

X_train, y_train = dperm.datasets.load_adult(preprocess="public", split="train")
X_test, y_test = dperm.datasets.load_adult(preprocess="public", split="test")

warnings.simplefilter("ignore", dperm.PrivacyLeakWarning)   # the seed, on purpose (above)

with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                  dashboard_address=":0") as cluster, Client(cluster) as client:
    # Real data would be read by the workers (dask.array.from_zarr, dask.dataframe, ...);
    # here the array is sent to the cluster once and cut into blocks of whole rows there.
    X_dask = da.from_delayed(client.scatter(X_train), X_train.shape, X_train.dtype)
    X_dask = X_dask.rechunk((len(X_train) // 4 + 1, -1))
    on_cluster = dperm.PrivateLinearClassifier(epsilon=1.0, classes=[-1, 1], random_state=0)
    on_cluster.fit(X_dask, y_train)

in_memory = dperm.PrivateLinearClassifier(epsilon=1.0, classes=[-1, 1], random_state=0)
in_memory.fit(X_train, y_train)

print(f"cluster accuracy   {on_cluster.score(X_test, y_test):.3f}")
print(f"in-memory accuracy {in_memory.score(X_test, y_test):.3f}")
print("largest coefficient difference:", np.abs(on_cluster.coef_ - in_memory.coef_).max())

# %%
fig, ax = plt.subplots(figsize=(5, 5))
ax.scatter(in_memory.coef_.ravel(), on_cluster.coef_.ravel(), s=12)
ax.set_xlabel("coefficient, fitted in memory")
ax.set_ylabel("coefficient, fitted on the cluster")
ax.set_title("Same seed, same model")
fig.tight_layout()
plt.show()
