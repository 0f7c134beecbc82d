"""Random Fourier features for the Gaussian kernel: Algorithm 3 of the paper.

Private kernel ERM (Chaudhuri, Monteleoni & Sarwate 2011, Section 5) maps each
row x to a D-dimensional vector v(x) with random parameters drawn
INDEPENDENTLY of the data, then runs the linear private algorithms
(Algorithm 1 or 2) on v(x).  The random parameters are part of the released
model; since they do not depend on the data they cost no privacy.

Norm correction (docs/specification.md).  The paper's Algorithm 3 scales the features by
sqrt(2/D), so that v(x).v(x') approximates the kernel directly; but then
||v(x)||^2 = (2/D) sum_j cos^2(...) can reach 2, i.e. ||v(x)|| up to sqrt(2),
and the privacy proofs of Algorithms 1 and 2 assume ||v(x)|| <= 1.  This
module scales by 1/sqrt(D) instead, so ||v(x)|| <= 1 for EVERY x (whatever its
norm) and `PrivateLinearClassifier(data_norm=1.0)` can be used unchanged;
the kernel is then approximated by 2 v(x).v(x').  The factor 2 only rescales
the coefficients (equivalently Lambda), it changes no classifier's sign.
"""
from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin

from dperm.data.validation import check_positive, check_random_state, check_X

__all__ = ["RandomFourierFeatures"]


class RandomFourierFeatures(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Random Fourier features for k(x, x') = exp(-gamma ||x - x'||^2), with ||v(x)|| <= 1.

    `fit` draws, independently of the data (it reads only the number of
    columns of X), omega_j ~ N(0, 2 gamma I_d) and psi_j ~ Uniform[-pi, pi],
    j = 1..D; `transform` maps x to

        v_j(x) = cos(omega_j . x + psi_j) / sqrt(D),

    so that ||v(x)|| <= 1 for every x and 2 v(x).v(x') is an unbiased estimate
    of the kernel, with error O(1/sqrt(D)).  (The paper's Algorithm 3 uses the
    scale sqrt(2/D), whose norm can reach sqrt(2); see the module docstring.)

    Use it in front of a private linear classifier with the unit norm bound::

        Pipeline([("rff", RandomFourierFeatures(gamma=10.0, n_components=100)),
                  ("clf", PrivateLinearClassifier(data_norm=1.0, epsilon=1.0))])

    The fitted `omega_` and `psi_` are part of the released model (Theorem 5
    of the paper: they are data-independent, so the pipeline is as private as
    the classifier).

    Parameters
    ----------
    gamma : float > 0
        Kernel width parameter gamma of exp(-gamma ||x - x'||^2).
    n_components : int >= 1
        Number D of random features (the output dimension).  More features
        approximate the kernel better but, in a private classifier, bring more
        noise (its norm grows with the dimension).
    random_state : None, int or numpy Generator
        None (the default) draws fresh OS entropy on every fit; an int or a
        Generator makes the draws reproducible.  Never derive it from the data.

    Attributes
    ----------
    omega_ : ndarray of shape (n_features_in, n_components)
        Random frequencies, columns omega_j ~ N(0, 2 gamma I).
    psi_ : ndarray of shape (n_components,)
        Random phases, Uniform[-pi, pi].
    n_features_in_ : int
        Number of input columns d seen in fit.

    Examples
    --------
    >>> from sklearn.datasets import make_circles
    >>> from sklearn.pipeline import make_pipeline
    >>> import dperm
    >>> X, y = make_circles(n_samples=4000, noise=0.05, factor=0.5, random_state=0)
    >>> model = make_pipeline(dperm.RandomFourierFeatures(gamma=5.0, n_components=100),
    ...                       dperm.PrivateLinearClassifier(epsilon=1.0, classes=[0, 1]))
    >>> bool(model.fit(X[:3000], y[:3000]).score(X[3000:], y[3000:]) > 0.6)
    True
    """

    def __init__(self, gamma: float = 1.0, n_components: int = 500,
                 random_state: int | np.random.Generator | None = None) -> None:
        self.gamma = gamma
        self.n_components = n_components
        self.random_state = random_state

    def _check_params(self):
        check_positive(self.gamma, "gamma")
        D = self.n_components
        if isinstance(D, (bool, np.bool_)) or not isinstance(D, (numbers.Integral, np.integer)) or D < 1:
            raise ValueError(f"n_components: must be an integer >= 1, got {D!r}")
        # validates the seed without consuming anything; a Generator (or a legacy
        # RandomState) is used, and advanced, in fit
        if not isinstance(self.random_state, (np.random.Generator, np.random.RandomState)):
            check_random_state(self.random_state)

    def fit(self, X: ArrayLike, y: Any = None) -> RandomFourierFeatures:
        """Draw the random parameters.

        Parameters
        ----------
        X : array of shape (n_samples, n_features)
            Only its number of columns is used: the draws do not depend on the
            values of X (so they cost no privacy).
        y : ignored

        Returns
        -------
        self
        """
        self._check_params()
        X = check_X(X, name="X", accept_sparse=True)
        d = X.shape[1]
        D = int(self.n_components)
        rng = check_random_state(self.random_state)
        omega = rng.normal(0.0, np.sqrt(2.0 * float(self.gamma)), size=(d, D))
        psi = rng.uniform(-np.pi, np.pi, size=D)
        self.omega_ = omega
        self.psi_ = psi
        self.n_features_in_ = d
        self._n_features_out = D
        return self

    def transform(self, X: ArrayLike) -> np.ndarray:
        """Map rows to random features.

        Parameters
        ----------
        X : array of shape (n_samples, n_features_in)

        Returns
        -------
        V : ndarray of shape (n_samples, n_components), float64
            V[i, j] = cos(omega_j . x_i + psi_j) / sqrt(n_components); every
            row has Euclidean norm <= 1, and 2 V V^T approximates the kernel
            matrix exp(-gamma ||x_i - x_k||^2).
        """
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, ["omega_", "psi_"])
        X = check_X(X, name="X", accept_sparse=True)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but RandomFourierFeatures is expecting "
                             f"{self.n_features_in_} features as input (the number seen in fit)")
        # in row blocks (CSR: scipy's product, O(nnz D)): X is never densified or copied
        from dperm.data.design import matmul_rows

        V = matmul_rows(X, self.omega_)
        V += self.psi_
        np.cos(V, out=V)
        V *= 1.0 / np.sqrt(self.omega_.shape[1])
        return V

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        tags.input_tags.sparse = True
        return tags
