"""The privacy layer: neighbouring relations, noise (continuous and exact), calibration
(pure, Gaussian, AMP), the mechanisms, the regularization rule, private tuning and the
budget accountant."""
