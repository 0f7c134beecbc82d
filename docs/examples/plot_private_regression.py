"""
Private linear regression
=========================

``dperm.PrivateLinearRegression`` fits a linear model whose coefficients are
differentially private. The rows must lie inside a public norm bound ``data_norm`` and the
targets inside a public bound ``label_bound``. Its methods: objective perturbation of a
pseudo-Huber loss (``"objective"``, the default), output perturbation (``"output"``) and
AdaSSP (``"adassp"``, noisy sufficient statistics, needs δ > 0). Here R² on held-out rows
against ε, on synthetic data whose public bounds are known by construction.
"""
import matplotlib.pyplot as plt
import numpy as np

import dperm

rng = np.random.default_rng(0)
n, d = 20_000, 5
X = rng.uniform(-1, 1, size=(2 * n, d)) / np.sqrt(d)           # every row has norm <= 1
true_coef = np.array([1.0, -2.0, 0.5, 0.0, 1.5])
y = np.clip(X @ true_coef + 0.1 * rng.normal(size=2 * n), -1, 1)  # |y| <= 1
X_train, y_train, X_test, y_test = X[:n], y[:n], X[n:], y[n:]

epsilons = [0.1, 0.3, 1.0, 3.0]
scores = {}
for method in ("objective", "output", "adassp"):
    scores[method] = []
    for eps in epsilons:
        reg = dperm.PrivateLinearRegression(method=method, epsilon=eps,
                                            delta=1e-6 if method == "adassp" else 0.0,
                                            label_bound=1.0, data_norm=1.0)
        reg.fit(X_train, y_train)
        scores[method].append(reg.score(X_test, y_test))
    print(method, " ".join(f"{s:.3f}" for s in scores[method]))

# %%
# The released record: public values only.
print({k: reg.privacy_[k] for k in ("method", "epsilon", "delta")})

# %%
fig, ax = plt.subplots(figsize=(6, 4))
for method, values in scores.items():
    ax.plot(epsilons, values, marker="o", label=method + (" (δ = 1e-6)" if method == "adassp" else ""))
ax.set_xscale("log")
ax.set_xlabel("ε")
ax.set_ylabel("held-out R²")
ax.set_ylim(bottom=max(-0.5, min(min(v) for v in scores.values()) - 0.05), top=1)
ax.set_title(f"Synthetic data, n = {n}, d = {d}")
ax.legend()
fig.tight_layout()
plt.show()
