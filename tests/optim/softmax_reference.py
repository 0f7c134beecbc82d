"""The numpy row-block softmax pass: the reference the compiled softmax pass is tested
against (it was dperm's own fallback path; no entry point reaches it any more).

Rows are read in blocks; per block the margins of all m problems are ONE matrix product
X_block @ W_all.T with W_all (m K, d), and the gradients ONE product R.T @ X_block with
the residuals R (softmax - one-hot) of all problems."""
import numpy as np

from dperm.data.oracle import softmax_rows
from dperm.data.validation import check_class_labels


def _grad_add(rows, Xb, rs, R, Gx, gc):
    """Gx += (rs R).T @ Xb, gc += const * sum(R): the gradient of the data term."""
    if gc is not None:
        gc += rows.const * R.sum(axis=0)
    if not (isinstance(rs, float) and rs == 1.0):
        R = R * rs
    if rows.sparse:
        Gx += (Xb.T @ R).T
    else:
        Gx += R.T @ Xb


def data_term(rows, y, W):
    """sum_i [logsumexp(W_j x_i) - (W_j x_i)_{y_i}] (m,) and its gradient (m, K, d)."""
    m, K, d = W.shape
    mK = m * K
    Wall = W.reshape(mK, d)
    has_c = rows.const is not None
    Wx = np.ascontiguousarray(Wall[:, :rows.d_raw]) if has_c else Wall
    wc = Wall[:, -1].copy() if has_c else None
    F = np.zeros(m)
    Gx = np.zeros((mK, rows.d_raw))
    gc = np.zeros(mK) if has_c else None
    for i0, i1, Xb, rs in rows.blocks(mK):
        nb = i1 - i0
        Z = rows.margins(Xb, rs, Wx, wc).reshape(nb, m, K)
        ar = np.arange(nb)
        yb = y[i0:i1]
        zy = Z[ar, :, yb]                      # (nb, m): margin of the true class
        mx = Z.max(axis=-1)                    # (nb, m)
        Z -= mx[:, :, None]
        np.exp(Z, out=Z)
        s = Z.sum(axis=-1)                     # (nb, m), each >= 1
        F += (mx + np.log(s) - zy).sum(axis=0)
        Z /= s[:, :, None]                     # softmax
        Z[ar, :, yb] -= 1.0                    # residuals: softmax - one-hot
        _grad_add(rows, Xb, rs, Z.reshape(nb, mK), Gx, gc)
    G = np.empty((mK, d))
    G[:, :rows.d_raw] = Gx
    if has_c:
        G[:, -1] = gc
    return F, G.reshape(m, K, d)


def multinomial_value_grad(X, y, W, alpha, linear=None):
    """The mean objective J_j and its gradient for W (m, K, d), as
    dperm.optim.softmax.multinomial_value_grad computes it."""
    rows = softmax_rows(X)
    W = np.ascontiguousarray(W, dtype=np.float64)
    m, K, _ = W.shape
    y = check_class_labels(y, rows.n, K)
    l2 = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (m,))
    F, G = data_term(rows, y, W)
    F /= rows.n
    G /= rows.n
    F += 0.5 * l2 * np.einsum("jkd,jkd->j", W, W)
    G += l2[:, None, None] * W
    if linear is not None:
        B = np.broadcast_to(np.asarray(linear, dtype=np.float64), W.shape)
        F += np.einsum("jkd,jkd->j", B, W) / rows.n
        G += B / rows.n
    return F, G
