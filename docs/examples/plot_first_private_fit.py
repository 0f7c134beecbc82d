"""
A first private fit
===================

Train an ε-differentially private logistic regression on the UCI Adult data (shipped with
dperm), scaled by **public** bounds so that every row has norm at most 1, and compare its
coefficients with those of the non-private fit on the same rows.
"""
import matplotlib.pyplot as plt
import numpy as np

import dperm

X_train, y_train = dperm.datasets.load_adult(preprocess="public", split="train")
X_test, y_test = dperm.datasets.load_adult(preprocess="public", split="test")
print(X_train.shape, "training rows x features;", X_test.shape[0], "test rows")

# %%
# The private model: ε = 1, Λ chosen by ``alpha="auto"`` from public quantities only.
clf = dperm.PrivateLinearClassifier(epsilon=1.0, classes=[-1, 1], random_state=0)
clf.fit(X_train, y_train)
print(f"private accuracy {clf.score(X_test, y_test):.3f}")
print(f"majority class   {max(np.mean(y_test == 1), np.mean(y_test == -1)):.3f}")

# %%
# ``privacy_`` holds public values only: publish it with the model.
# ``fit_diagnostics_`` describes the solve on the private rows: never publish it.
for key in ("mechanism", "noise", "epsilon", "delta", "alpha", "data_norm"):
    print(f"{key:>10}: {clf.privacy_[key]}")

# %%
# The same estimator without noise (``perturbation="none"``, at the same Λ) is the
# non-private reference. The private coefficients scatter around it.
reference = dperm.PrivateLinearClassifier(perturbation="none", alpha=clf.alpha_, classes=[-1, 1])
reference.fit(X_train, y_train)
print(f"non-private accuracy {reference.score(X_test, y_test):.3f}")

fig, ax = plt.subplots(figsize=(5, 5))
ax.scatter(reference.coef_.ravel(), clf.coef_.ravel(), s=12)
lim = np.abs(np.concatenate([reference.coef_.ravel(), clf.coef_.ravel()])).max() * 1.05
ax.plot([-lim, lim], [-lim, lim], color="grey", lw=1)
ax.set_xlabel("non-private coefficient")
ax.set_ylabel("private coefficient (ε = 1)")
ax.set_title("Adult: private against non-private coefficients")
fig.tight_layout()
plt.show()
