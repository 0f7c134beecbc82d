# Per-sample margin losses phi(z), z = y * f.x, with phi' and phi''.
# Every margin loss has |phi'| <= 1 and 0 <= phi'' <= c (c in dperm/losses.py).
# A regression loss (pseudo-Huber) is a function of the residual r = f.x - y: the
# score and the label, through residual(); |rho'| <= h and 0 <= rho'' <= 1 (the bounds
# in dperm/losses.py).  Stable for |z| up to 1e4 and beyond: no overflow, no NaN.
# The loss ids are _rows.h's (one enum for the C and the Cython kernels); an unknown id
# gives NaN here, never another loss's values.
from libc.math cimport exp, log1p, fabs, sqrt, NAN

from dperm._core._rows cimport (
    DPERM_LOSS_LOGISTIC as LOSS_LOGISTIC, DPERM_LOSS_HUBER as LOSS_HUBER,
    DPERM_LOSS_SMOOTH_HINGE as LOSS_SMOOTH_HINGE, DPERM_LOSS_PSEUDO_HUBER as LOSS_PSEUDO_HUBER)


cdef inline double residual(double score, double label) noexcept nogil:
    """The argument of a regression loss: r = f.x - y."""
    return score - label


cdef inline double pseudo_huber(double r, double h, double* deriv) noexcept nogil:
    """rho(r) = h^2 (sqrt(1 + (r/h)^2) - 1) = h |r| |t| / (s + 1), t = r/h,
    s = sqrt(1 + t^2); rho'(r) = h t / s is written to deriv."""
    cdef double t = r / h, s
    if t > 1e150:
        t = 1e150
    elif t < -1e150:
        t = -1e150
    s = sqrt(1.0 + t * t)
    deriv[0] = h * t / s
    return h * fabs(r) * (fabs(t) / (s + 1.0))


cdef inline double pseudo_huber_second(double r, double h) noexcept nogil:
    """rho''(r) = (1 + (r/h)^2)^(-3/2)."""
    cdef double t = r / h, s
    if t > 1e150:
        t = 1e150
    elif t < -1e150:
        t = -1e150
    s = sqrt(1.0 + t * t)
    return 1.0 / (s * s * s)


cdef inline double loss_value_deriv(int loss, double z, double h, double* deriv) noexcept nogil:
    """phi(z); phi'(z) is written to deriv (z: the residual for a regression loss)."""
    cdef double e, u, q
    if loss == LOSS_PSEUDO_HUBER:
        return pseudo_huber(z, h, deriv)
    if loss == LOSS_LOGISTIC:
        # log(1 + e^-z) = max(-z, 0) + log1p(e^-|z|)
        if z > 0:
            e = exp(-z)
            deriv[0] = -e / (1.0 + e)
            return log1p(e)
        e = exp(z)
        deriv[0] = -1.0 / (1.0 + e)
        return -z + log1p(e)
    if loss != LOSS_HUBER and loss != LOSS_SMOOTH_HINGE:
        deriv[0] = NAN
        return NAN
    u = 1.0 - z
    if u < -h:          # z > 1 + h
        deriv[0] = 0.0
        return 0.0
    if u > h:           # z < 1 - h
        deriv[0] = -1.0
        return u
    if loss == LOSS_HUBER:
        q = u + h       # 1 + h - z
        deriv[0] = -q / (2.0 * h)
        return q * q / (4.0 * h)
    # smooth hinge, eq. 38 factored: (u + h)^3 (3h - u) / (16 h^3), >= 0 with no
    # cancellation next to z = 1 + h; its derivative in z is -(u + h)^2 (2h - u) / (4 h^3)
    q = u + h
    deriv[0] = -q * q * (2.0 * h - u) / (4.0 * h * h * h)
    return q * q * q * (3.0 * h - u) / (16.0 * h * h * h)


cdef inline double loss_second(int loss, double z, double h) noexcept nogil:
    """phi''(z) (z: the residual for a regression loss)."""
    cdef double e, u
    if loss == LOSS_PSEUDO_HUBER:
        return pseudo_huber_second(z, h)
    if loss == LOSS_LOGISTIC:
        e = exp(-fabs(z))
        return e / ((1.0 + e) * (1.0 + e))
    if loss != LOSS_HUBER and loss != LOSS_SMOOTH_HINGE:
        return NAN
    u = 1.0 - z
    if u < -h or u > h:
        return 0.0
    if loss == LOSS_HUBER:
        return 1.0 / (2.0 * h)
    return -3.0 * u * u / (4.0 * h * h * h) + 3.0 / (4.0 * h)
