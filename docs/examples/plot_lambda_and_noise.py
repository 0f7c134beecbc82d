"""
Λ and the noise
===============

The regulariser Λ (``alpha``) trades bias for noise: the noise a mechanism adds to the
coefficients shrinks like 1/(nΛε), while a large Λ shrinks the model towards zero. This
example sweeps Λ at ε = 0.1 on Adult, for both mechanisms, and marks the Λ that
``alpha="auto"`` picks from public quantities only (n, d, ε, the norm bound).
"""
import matplotlib.pyplot as plt
import numpy as np

import dperm

X_train, y_train = dperm.datasets.load_adult(preprocess="public", split="train")
X_test, y_test = dperm.datasets.load_adult(preprocess="public", split="test")
epsilon, draws = 0.1, 3
alphas = np.logspace(-5, 0, 11)
n, d = X_train.shape

results = {}
for name, mechanism in (("objective", dperm.objective_perturbation),
                        ("output", dperm.output_perturbation)):
    fit = mechanism(X_train, y_train, alpha=alphas, epsilon=epsilon, n_draws=draws)
    # fit.coef: (len(alphas), draws, d); accuracy per (alpha, draw)
    acc = np.mean(np.sign(np.einsum("nd,adk->ank", X_test, fit.coef.transpose(0, 2, 1)))
                  == y_test[None, :, None], axis=1)
    auto = dperm.regularization.auto_alpha(n, d, epsilon, perturbation=name)
    results[name] = (acc, auto)
    print(f"{name}: best grid accuracy {acc.mean(axis=1).max():.3f}, auto alpha {auto:.2e}")

# %%
# The expected shift of the coefficients caused by the noise, against the largest norm
# the noise-free coefficients can have: where the first dominates, the model is mostly
# noise (``dperm.NoiseDominatedWarning``).
shift = [dperm.regularization.expected_noise_shift(n, d, epsilon, a, perturbation="output")
         for a in alphas]
bound = [dperm.regularization.coefficient_bound(a) for a in alphas]

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
for name, (acc, auto) in results.items():
    line, = ax1.plot(alphas, acc.mean(axis=1), marker="o", label=f"{name} perturbation")
    ax1.axvline(auto, color=line.get_color(), ls=":", label=f'alpha="auto" ({name})')
ax1.set_xscale("log")
ax1.set_xlabel("Λ")
ax1.set_ylabel("test accuracy")
ax1.set_title(f"Adult, ε = {epsilon}")
ax1.legend(fontsize=8)
ax2.loglog(alphas, shift, label="expected noise shift (output perturbation)")
ax2.loglog(alphas, bound, label="largest noise-free coefficient norm")
ax2.set_xlabel("Λ")
ax2.legend(fontsize=8)
fig.tight_layout()
plt.show()
