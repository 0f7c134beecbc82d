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
clf = dperm.PrivateLinearClassifier(epsilon=1.0, classes=[-1, 1])   # fresh noise: no seed
clf.fit(X_train, y_train)
private = clf.score(X_test, y_test)
majority = max(np.mean(y_test == 1), np.mean(y_test == -1))
print(f"private accuracy {private:.3f}")
print(f"majority class   {majority:.3f}")

# %%
# ``privacy_`` holds public values only: publish it with the model.
# ``fit_diagnostics_`` describes the solve on the private rows: never publish it.
for key in ("mechanism", "noise", "epsilon", "delta", "alpha", "data_norm"):
    print(f"{key:>10}: {clf.privacy_[key]}")

# %%
# The same estimator without noise (``perturbation="none"``, at the same Λ) is the
# non-private reference; a few more private fits at other ε show what the noise costs.
reference = dperm.PrivateLinearClassifier(perturbation="none", alpha=clf.alpha_, classes=[-1, 1])
reference.fit(X_train, y_train)
others = {eps: dperm.PrivateLinearClassifier(epsilon=eps, classes=[-1, 1]).fit(X_train, y_train)
          .score(X_test, y_test) for eps in (0.1, 10.0)}
print(f"non-private accuracy {reference.score(X_test, y_test):.3f}")

labels = ["majority\nclass", "private\nε = 0.1", "private\nε = 1", "private\nε = 10", "non-private"]
values = [majority, others[0.1], private, others[10.0], reference.score(X_test, y_test)]
fig, ax = plt.subplots(figsize=(6, 4))
bars = ax.bar(labels, values, color=["grey", "C0", "C0", "C0", "black"])
ax.bar_label(bars, fmt="%.3f")
ax.set_ylim(0.7, 0.86)
ax.set_ylabel("test accuracy")
ax.set_title("Adult: one private fit per ε (public bounds, alpha=\"auto\")")
fig.tight_layout()
plt.show()
