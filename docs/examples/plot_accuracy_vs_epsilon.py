"""
Accuracy against ε, beside the non-private fit
==============================================

Objective perturbation (Algorithm 2) and output perturbation (Algorithm 1) on Adult, for
ε from 0.05 to 5, at a fixed Λ, several noise draws each; the non-private fit at the same Λ
is the ceiling. The batched mechanisms solve every noise draw in one pass over the data
(``n_draws``).
"""
import matplotlib.pyplot as plt
import numpy as np

import dperm

X_train, y_train = dperm.datasets.load_adult(preprocess="public", split="train")
X_test, y_test = dperm.datasets.load_adult(preprocess="public", split="test")
alpha, draws = 1e-3, 3
epsilons = [0.05, 0.1, 0.3, 1.0, 3.0]


def accuracy(coef):
    """Test accuracy of each coefficient vector (no intercept: the mechanisms fit
    f(x) = coef . x; the estimator adds an intercept column for you)."""
    return np.mean(np.sign(X_test @ np.atleast_2d(coef).T) == y_test[:, None], axis=0)


curves = {}
for name, mechanism in (("objective", dperm.objective_perturbation),
                        ("output", dperm.output_perturbation)):
    curves[name] = [accuracy(mechanism(X_train, y_train, alpha=alpha, epsilon=eps,
                                       n_draws=draws).coef)
                    for eps in epsilons]

non_private = dperm.erm.minimize(X_train, y_train, alpha=alpha).coef
ceiling = accuracy(non_private)[0]
print(f"non-private accuracy at alpha={alpha}: {ceiling:.3f}")
for name, accs in curves.items():
    print(name, " ".join(f"{a.mean():.3f}" for a in accs))

# %%
fig, ax = plt.subplots(figsize=(6, 4))
for name, accs in curves.items():
    means = [a.mean() for a in accs]
    spread = [a.std() for a in accs]
    ax.errorbar(epsilons, means, yerr=spread, marker="o", capsize=3,
                label=f"{name} perturbation")
ax.axhline(ceiling, color="black", ls="--", label="non-private")
ax.set_xscale("log")
ax.set_xlabel("ε")
ax.set_ylabel("test accuracy")
ax.set_title(f"Adult, Λ = {alpha:g}, {draws} noise draws per ε")
ax.legend()
fig.tight_layout()
plt.show()
