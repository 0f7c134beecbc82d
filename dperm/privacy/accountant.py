"""Composition of (epsilon, delta) across fits: a privacy budget ledger.

A :class:`BudgetAccountant` holds a total budget (epsilon, delta) and the list of
privacy events spent against it.  Pure epsilon-DP fits (a float, or a
:class:`PureEvent`) compose by summation exactly as before; once any event with a
delta or an RDP curve is spent, the total is the smallest of several valid bounds
(basic composition, Renyi DP, privacy loss distributions), computed with Google's
``dp_accounting`` (imported lazily, on first use).

Neighbouring data sets differ in one row, under the relation the fits were made for
(replace-one, dperm's default, or add/remove); compose only events of one relation.  A
Gaussian event's ``noise_multiplier`` is sigma / Delta with Delta the L2
sensitivity under THAT relation, i.e. the largest distance between the two
neighbours' noise-free outputs: the dominating pair is (N(0, sigma^2),
N(Delta, sigma^2)).  In ``dp_accounting`` terms that is a ``GaussianDpEvent``
analysed with a shift of one sensitivity (its ADD_OR_REMOVE_ONE analysis); its
REPLACE_ONE analysis would double the shift and must not be used with these
noise multipliers.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Union

import numpy as np

from dperm.data.validation import check_epsilon
from dperm.exceptions import BudgetExceededError

__all__ = [
    "BudgetAccountant", "PureEvent", "GaussianEvent", "ObjectiveGaussianEvent",
    "ApproxEvent", "Composition", "compose", "RDP_ORDERS",
]

# The Renyi orders every RDP curve is evaluated on: dp_accounting's
# rdp_privacy_accountant.DEFAULT_RDP_ORDERS (0.6.0), written out here so that
# importing dperm does not import dp_accounting.  tests/privacy/test_accountant.py checks
# that the two agree.
RDP_ORDERS = tuple(
    [1 + x / 10.0 for x in range(1, 100)] + [float(a) for a in range(11, 64)]
    + [128.0, 256.0, 512.0, 1024.0])

# relative slack on the budget so that e.g. ten fits of 0.1 fit in 1.0
_SLACK = 1e-12
# value discretization of the privacy loss distributions: dp_accounting's default
# is 1e-4; 1e-3 is ~10x faster and, the rounding being pessimistic, still an upper
# bound (looser by at most about 1e-3 per composed non-Gaussian event)
_PLD_DISCRETIZATION = 1e-3


def _check_delta(delta: float, name: str = "delta", *, allow_zero: bool = True) -> float:
    """A real number in [0, 1) (or (0, 1) when not allow_zero)."""
    if isinstance(delta, (bool, np.bool_)) or not isinstance(delta, numbers.Real):
        raise ValueError(f"{name}: must be a number in [0, 1), got {delta!r}")
    delta = float(delta)
    if not (0.0 <= delta < 1.0) or (delta == 0.0 and not allow_zero):
        lo = "[0, 1)" if allow_zero else "(0, 1)"
        raise ValueError(f"{name}: must be in {lo}, got {delta!r}")
    return delta


# --------------------------------------------------------------------------- events

@dataclasses.dataclass(frozen=True)
class PureEvent:
    """A pure epsilon-DP release.

    RDP curve: min(epsilon, alpha epsilon^2 / 2) (epsilon-DP implies
    (alpha, epsilon)-RDP, and epsilon^2/2-zCDP by Bun & Steinke 2016, Prop. 3.3).

    Parameters
    ----------
    epsilon : float
        The release's epsilon (> 0, finite; nats).

    Examples
    --------
    >>> from dperm import PureEvent
    >>> PureEvent(0.5).delta
    0.0
    """
    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, "epsilon"))

    @property
    def delta(self) -> float:
        return 0.0

    def rdp(self, orders: Sequence[float] = RDP_ORDERS) -> np.ndarray:
        """The RDP curve at `orders`.

        Parameters
        ----------
        orders : sequence of float, default RDP_ORDERS
            Rényi orders alpha > 1 (dimensionless) at which to evaluate the curve.

        Returns
        -------
        ndarray of shape (len(orders),)
            The RDP epsilon at each order (float64; ``inf`` where there is no bound).
        """
        a = np.asarray(orders, dtype=np.float64)
        return np.minimum(self.epsilon, a * self.epsilon ** 2 / 2)


@dataclasses.dataclass(frozen=True)
class GaussianEvent:
    """A Gaussian mechanism: noise N(0, sigma^2 I) added to a function of L2
    sensitivity Delta (replace-one), noise_multiplier = sigma / Delta.

    `epsilon`, `delta` state its own (epsilon, delta) guarantee (used by basic
    composition); it is checked against the exact guarantee of the Gaussian
    mechanism (Balle & Wang 2018): a claim the noise does not give is refused.
    RDP curve: alpha / (2 noise_multiplier^2) (Mironov 2017, Prop. 7; the same
    numbers as dp_accounting's RdpAccountant for a GaussianDpEvent).

    Parameters
    ----------
    noise_multiplier : float
        sigma / Delta: the noise's standard deviation over the L2 sensitivity (> 0).
    epsilon : float
        The stated epsilon (> 0).
    delta : float
        The stated delta, in (0, 1); it must be at least the mechanism's exact delta at
        ``epsilon``.

    Raises
    ------
    ValueError
        A parameter out of range, or an (epsilon, delta) claim the noise does not give.

    Examples
    --------
    >>> from dperm import BudgetAccountant, GaussianEvent
    >>> from dperm.privacy.calibration import analytic_gaussian_sigma
    >>> sigma = analytic_gaussian_sigma(0.5, 1e-6, 1.0)     # sensitivity 1
    >>> budget = BudgetAccountant(epsilon=2.0, delta=1e-5)
    >>> budget.spend(GaussianEvent(noise_multiplier=sigma, epsilon=0.5, delta=1e-6))
    >>> 0 < budget.spent <= 0.5
    True
    """
    noise_multiplier: float
    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        nm = self.noise_multiplier
        if isinstance(nm, (bool, np.bool_)) or not isinstance(nm, numbers.Real) \
                or not (math.isfinite(float(nm)) and float(nm) > 0):
            raise ValueError(f"noise_multiplier: must be a positive finite number, got {nm!r}")
        object.__setattr__(self, "noise_multiplier", float(nm))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, "epsilon"))
        object.__setattr__(self, "delta", _check_delta(self.delta, "delta", allow_zero=False))
        from dperm.privacy.calibration import gaussian_delta

        # exact: no room for a claim below the true delta. The same evaluation as
        # dperm.privacy.calibration.analytic_gaussian_sigma, so a sigma calibrated there for
        # (epsilon, delta) is accepted with exactly that claim
        true_delta = gaussian_delta(self.epsilon, 1.0, self.noise_multiplier)
        if true_delta > self.delta:
            raise ValueError(
                f"epsilon: a Gaussian mechanism with noise_multiplier={self.noise_multiplier:g} "
                f"is not ({self.epsilon:g}, {self.delta:g})-DP: at epsilon={self.epsilon:g} "
                f"its delta is {true_delta:.17g}")

    def rdp(self, orders: Sequence[float] = RDP_ORDERS) -> np.ndarray:
        """The RDP curve at `orders`: alpha / (2 noise_multiplier^2).

        Parameters
        ----------
        orders : sequence of float, default RDP_ORDERS
            Rényi orders alpha > 1 (dimensionless) at which to evaluate the curve.

        Returns
        -------
        ndarray of shape (len(orders),)
            The RDP epsilon at each order (float64; ``inf`` where there is no bound).
        """
        a = np.asarray(orders, dtype=np.float64)
        return a / (2 * self.noise_multiplier ** 2)


@dataclasses.dataclass(frozen=True)
class ObjectiveGaussianEvent:
    """A mechanism that carries its own RDP curve (e.g. objective perturbation with
    Gaussian noise, whose curve dperm.privacy.calibration computes) and its own stated
    (epsilon, delta) guarantee.

    `rdp_orders` (increasing, each > 1, finite) and `rdp_values` (>= 0, inf
    allowed): the RDP guarantee eps(alpha) at those orders.  Give the values on
    :data:`RDP_ORDERS` (``BudgetAccountant.RDP_ORDERS``) to have them used as they
    are.  A curve on other orders is evaluated on RDP_ORDERS conservatively: at
    each order alpha the value at the smallest given order >= alpha (Renyi
    divergence is non-decreasing in the order), and infinity above the largest
    given order.

    Parameters
    ----------
    epsilon : float
        The stated epsilon (> 0), used by basic composition.
    delta : float
        The stated delta, in [0, 1).
    rdp_orders : tuple of float
        Rényi orders, strictly increasing, each > 1 and finite.
    rdp_values : tuple of float
        The RDP epsilon at each order (>= 0; ``inf`` allowed), one per order.

    Raises
    ------
    ValueError
        A parameter out of range, or orders and values of different lengths.

    Examples
    --------
    A fit's own event: ``dperm.privacy.mechanisms.privacy_events(clf.privacy_)`` builds it from
    a Gaussian fit's public record. By hand:

    >>> from dperm import BudgetAccountant, ObjectiveGaussianEvent
    >>> orders = BudgetAccountant.RDP_ORDERS
    >>> event = ObjectiveGaussianEvent(epsilon=1.0, delta=1e-6, rdp_orders=orders,
    ...                                rdp_values=[0.01 * a for a in orders])
    >>> float(event.rdp([2.0])[0]) >= 0.02
    True
    """
    epsilon: float
    delta: float
    rdp_orders: tuple
    rdp_values: tuple

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, "epsilon"))
        object.__setattr__(self, "delta", _check_delta(self.delta, "delta"))
        try:
            orders = np.asarray(self.rdp_orders, dtype=np.float64)
            values = np.asarray(self.rdp_values, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError("rdp_orders: rdp_orders and rdp_values must be 1-D sequences "
                             "of numbers") from None
        if orders.ndim != 1 or orders.size == 0:
            raise ValueError(f"rdp_orders: must be a non-empty 1-D sequence, got shape {orders.shape}")
        if not (np.all(np.isfinite(orders)) and np.all(orders > 1)):
            raise ValueError("rdp_orders: every order must be a finite number > 1")
        if orders.size > 1 and not np.all(np.diff(orders) > 0):
            raise ValueError("rdp_orders: must be strictly increasing")
        if values.shape != orders.shape:
            raise ValueError(f"rdp_values: must have one value per order ({orders.size}), "
                             f"got shape {values.shape}")
        if np.any(np.isnan(values)) or np.any(values < 0):
            raise ValueError("rdp_values: every value must be >= 0 (inf allowed, not nan)")
        object.__setattr__(self, "rdp_orders", tuple(float(a) for a in orders))
        object.__setattr__(self, "rdp_values", tuple(float(v) for v in values))

    def rdp(self, orders: Sequence[float] = RDP_ORDERS) -> np.ndarray:
        """The RDP curve at `orders`, read conservatively from the given curve.

        Parameters
        ----------
        orders : sequence of float, default RDP_ORDERS
            Rényi orders alpha > 1 (dimensionless) at which to evaluate the curve.

        Returns
        -------
        ndarray of shape (len(orders),)
            The RDP epsilon at each order (float64; ``inf`` where there is no bound).
        """
        a = np.asarray(orders, dtype=np.float64)
        given = np.asarray(self.rdp_orders)
        values = np.asarray(self.rdp_values)
        # exact matches first (no rounding through searchsorted on equal floats)
        idx = np.searchsorted(given, a, side="left")
        out = np.full(a.shape, np.inf)
        ok = idx < given.size
        out[ok] = values[idx[ok]]
        return out


@dataclasses.dataclass(frozen=True)
class ApproxEvent:
    """Any (epsilon, delta)-DP release with no better description; it composes by
    basic composition only (and, in the PLD bound, as the worst (epsilon, delta)-DP
    mechanism).

    Parameters
    ----------
    epsilon : float
        The release's epsilon (> 0).
    delta : float
        The release's delta, in [0, 1).

    Examples
    --------
    >>> from dperm import ApproxEvent, BudgetAccountant
    >>> budget = BudgetAccountant(epsilon=1.0, delta=1e-5)
    >>> budget.spend(ApproxEvent(epsilon=0.25, delta=1e-6))
    >>> budget.spent <= 0.25
    True
    """
    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, "epsilon"))
        object.__setattr__(self, "delta", _check_delta(self.delta, "delta"))

    def rdp(self, orders: Sequence[float] = RDP_ORDERS) -> np.ndarray | None:
        """No RDP curve: an ApproxEvent composes by its (epsilon, delta) alone.

        Parameters
        ----------
        orders : sequence of float, default RDP_ORDERS
            Ignored (kept for the events' common interface).

        Returns
        -------
        None
        """
        return None      # no RDP curve: composed by its (epsilon, delta) alone


_EVENT_TYPES = (PureEvent, GaussianEvent, ObjectiveGaussianEvent, ApproxEvent)


def _as_event(event_or_epsilon: Event | float) -> Event:
    if isinstance(event_or_epsilon, _EVENT_TYPES):
        return event_or_epsilon
    return PureEvent(check_epsilon(event_or_epsilon, "epsilon"))


# ----------------------------------------------------------------------- composition

#: any event a BudgetAccountant takes (a float stands for a PureEvent)
Event = Union["PureEvent", "GaussianEvent", "ObjectiveGaussianEvent", "ApproxEvent"]


@dataclasses.dataclass(frozen=True)
class Composition:
    """The total of a sequence of events at a delta budget.

    epsilon, delta : the chosen (smallest-epsilon) valid total.
    method : which bound it is: "none" (no events), "pure" (sum of pure epsilons),
        "basic", "rdp", "pld" or "gaussian" (exact, Gaussian events only).
    candidates : every bound computed, method -> (epsilon, delta); epsilon is
        inf where a bound does not apply within the delta budget.
    """
    epsilon: float
    delta: float
    method: str
    candidates: dict


def _basic(events: Counter[Event], delta_budget: float) -> tuple[float, float]:
    eps = sum(e.epsilon * c for e, c in events.items())
    dlt = sum(e.delta * c for e, c in events.items())
    if dlt > delta_budget * (1 + _SLACK):
        return (math.inf, dlt)
    return (eps, dlt)


def _rdp(events: Counter[Event], delta_budget: float,
         orders: Sequence[float] = RDP_ORDERS) -> tuple[float, float]:
    """RDP for the events with a curve, basic composition for ApproxEvents."""
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

    rdp = np.zeros(len(orders))
    approx_eps = approx_delta = 0.0
    for e, c in events.items():
        curve = e.rdp(orders)
        if curve is None:
            approx_eps += e.epsilon * c
            approx_delta += e.delta * c
        else:
            rdp = rdp + c * curve
    rest = delta_budget - approx_delta
    if rest <= 0:
        return (math.inf, delta_budget)
    eps, _ = compute_epsilon(list(orders), list(rdp), rest)
    return (float(eps) + approx_eps, delta_budget)


def _gaussian_exact(events: Counter[Event], delta_budget: float) -> tuple[float, float]:
    """All events Gaussian: k Gaussians compose exactly into one with
    noise_multiplier (sum 1/nm_i^2)^(-1/2); its exact epsilon (analytic Gaussian
    mechanism, dp_accounting.get_epsilon_gaussian)."""
    from dp_accounting import get_epsilon_gaussian

    inv = sum(c / e.noise_multiplier ** 2 for e, c in events.items()
              if isinstance(e, GaussianEvent))      # every event is (the caller checks)
    sigma = 1.0 / math.sqrt(inv)
    eps = float(get_epsilon_gaussian(sigma, delta_budget))
    # brentq stops within 1e-12 of the root, on either side: step past it
    eps += 1e-9 * max(1.0, eps)
    from dperm.privacy.calibration import gaussian_delta

    if gaussian_delta(eps, 1.0, sigma) > delta_budget:  # pragma: no cover
        return (math.inf, delta_budget)
    return (eps, delta_budget)


def _pld(events: Counter[Event], delta_budget: float) -> tuple[float, float]:
    """Privacy loss distributions (dp_accounting.pld, pessimistic estimates):
    the Gaussian events as one Gaussian PLD, every other event as the worst
    mechanism with its stated (epsilon, delta) (Kairouz, Oh & Viswanath 2015);
    composition of dominating pairs is valid under adaptive composition
    (Zhu, Dong & Wang 2022)."""
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as pld_mod

    total: Any = None                    # a dp_accounting PrivacyLossDistribution
    inv = sum(c / e.noise_multiplier ** 2 for e, c in events.items()
              if isinstance(e, GaussianEvent))
    if inv > 0:
        total = pld_mod.from_gaussian_mechanism(
            standard_deviation=1.0 / math.sqrt(inv), sensitivity=1.0,
            value_discretization_interval=_PLD_DISCRETIZATION)
    pairs: Counter[tuple[float, float]] = Counter()
    for e, c in events.items():
        if not isinstance(e, GaussianEvent):
            pairs[(e.epsilon, e.delta)] += c
    for (eps, dlt), c in sorted(pairs.items()):
        p = pld_mod.from_privacy_parameters(
            common.DifferentialPrivacyParameters(eps, dlt),
            value_discretization_interval=_PLD_DISCRETIZATION)
        if c > 1:
            p = p.self_compose(c)
        total = p if total is None else total.compose(p)
    eps = float(total.get_epsilon_for_delta(delta_budget))
    return (eps, delta_budget)


def compose(events: Iterable[Event | float], delta: float) -> Composition:
    """Total (epsilon, delta) of `events` (events or floats, in any order) at the
    delta budget `delta`: a :class:`Composition`.

    Only pure events: the sum of their epsilons, delta 0 (exact).  Otherwise the
    smallest epsilon of these valid bounds (ties go to the smaller delta):

    - "basic": (sum epsilon_i, sum delta_i), when sum delta_i <= delta;
    - "rdp": the RDP curves of the pure, Gaussian and curve-carrying events summed
      on RDP_ORDERS and converted at delta - sum of the ApproxEvents' deltas
      (dp_accounting.rdp.rdp_privacy_accountant.compute_epsilon), plus the
      ApproxEvents' epsilons; reported delta = `delta`;
    - "pld" (when some event is not Gaussian): privacy loss distributions (see
      _pld), at `delta`;
    - "gaussian" (when every event is Gaussian): the exact epsilon of their
      composition, one Gaussian mechanism with noise_multiplier
      (sum 1/nm_i^2)^(-1/2) (analytic Gaussian mechanism, Balle & Wang 2018).

    PLD and exact-Gaussian bounds are skipped (not an error) when dp_accounting
    cannot build them (e.g. a pure epsilon so large that exp overflows).
    """
    delta = _check_delta(delta, "delta")
    events = list(events)
    counts = Counter(_as_event(e) for e in events)
    if not counts:
        return Composition(0.0, 0.0, "none", {})
    if all(isinstance(e, PureEvent) for e in counts):
        eps = 0.0
        for e in events:  # left to right, as the ledger adds them
            eps += _as_event(e).epsilon
        return Composition(eps, 0.0, "pure", {"pure": (eps, 0.0)})
    cands = {"basic": _basic(counts, delta)}
    if delta > 0:
        cands["rdp"] = _rdp(counts, delta)
        # Gaussian events only: their exact composition, which no PLD improves on;
        # otherwise the PLD bound
        if all(isinstance(e, GaussianEvent) for e in counts):
            extra = [("gaussian", _gaussian_exact)]
        else:
            extra = [("pld", _pld)]
        for name, fn in extra:
            try:
                cands[name] = fn(counts, delta)
            except (ValueError, OverflowError, FloatingPointError, ArithmeticError):
                pass
    method = min(cands, key=lambda m: cands[m])
    eps, dlt = cands[method]
    return Composition(eps, dlt, method, cands)


# -------------------------------------------------------------------------- ledger

class BudgetAccountant:
    """Tracks the total privacy spent by the fits it is passed to.

    An estimator given `accountant=` asks `check(...)` before it touches the data
    and calls `spend(...)` after a successful fit; a fit that would exceed the
    budget raises BudgetExceededError and spends nothing.

    A float is a pure epsilon-DP release (:class:`PureEvent`); a sequence of pure
    releases totals the sum of their epsilons with delta 0, exactly as under plain
    sequential composition.  Other events (:class:`GaussianEvent`,
    :class:`ObjectiveGaussianEvent`, :class:`ApproxEvent`) need a delta budget;
    with them the total is the smallest valid bound of :func:`compose` at the
    budget's delta.  The reported total never decreases when an event is added
    (it is the componentwise maximum of the previous total and the new bound,
    both valid).

    Parameters
    ----------
    epsilon : float
        Total epsilon (> 0).
    delta : float, default 0
        Total delta, in [0, 1).  With delta = 0 only pure events fit.

    Attributes
    ----------
    history : list of (label, event)
        What was spent, in order; a float spend is recorded as the float.
    RDP_ORDERS : tuple of float
        The orders RDP curves are evaluated on (see ObjectiveGaussianEvent).

    Raises
    ------
    ValueError
        epsilon not a positive finite number, or delta outside [0, 1).

    Examples
    --------
    Pass one accountant to every fit on the same data; a fit that would exceed the
    total is refused before it reads the data:

    >>> import dperm
    >>> budget = dperm.BudgetAccountant(epsilon=1.0)
    >>> clf = dperm.PrivateLinearClassifier(epsilon=0.5, classes=[-1, 1], accountant=budget)
    >>> budget.spend(0.3, label="bounds")
    >>> budget.spent, budget.remaining
    (0.3, 0.7)
    >>> budget.check(0.5)
    0.5
    """

    RDP_ORDERS = RDP_ORDERS

    def __init__(self, epsilon: float, delta: float = 0.0) -> None:
        self.epsilon = check_epsilon(epsilon, "epsilon")
        self.delta = _check_delta(delta, "delta")
        self.history: list[tuple[str | None, Event | float]] = []
        self._total = (0.0, 0.0)
        self._composition = Composition(0.0, 0.0, "none", {})
        self._lock = threading.RLock()

    # ---- totals
    @property
    def spent(self) -> float:
        """The epsilon part of the total spent."""
        return self._total[0]

    @property
    def spent_delta(self) -> float:
        return self._total[1]

    def spent_epsilon_delta(self) -> tuple[float, float]:
        """The total (epsilon, delta) spent, at the budget's delta.

        Returns
        -------
        epsilon, delta : float
            What the history composes to (the same as ``spent`` and ``spent_delta``).
        """
        return self._total

    @property
    def composition(self) -> Composition:
        """The :class:`Composition` of the history (which bound, every candidate)."""
        return self._composition

    @property
    def remaining(self) -> float:
        return max(0.0, self.epsilon - self.spent)

    @property
    def remaining_delta(self) -> float:
        return max(0.0, self.delta - self.spent_delta)

    # ---- spending
    def _after(self, new_events: Sequence[Event | float]
               ) -> tuple[tuple[float, float], Composition]:
        """(total, composition) if `new_events` (a list) were added (lock held)."""
        events = [ev for _, ev in self.history] + list(new_events)
        key = (tuple(events), self.delta)
        cached = self.__dict__.get("_cache")
        if cached is not None and cached[0] == key:  # check() then spend(): once
            comp = cached[1]
        else:
            comp = compose(events, self.delta)
            self._cache = (key, comp)
        if comp.method == "pure":
            total = self._total[0]
            for ev in new_events:
                total += _as_event(ev).epsilon
            total = (total, 0.0)
        else:
            total = (max(self._total[0], comp.epsilon), max(self._total[1], comp.delta))
        return total, comp

    def _refuse_if_over(self, new_events: Sequence[Event | float],
                        total: tuple[float, float]) -> None:
        if total[0] > self.epsilon * (1 + _SLACK) or total[1] > self.delta * (1 + _SLACK):
            evs = [_as_event(e) for e in new_events]
            what = (f"a fit with epsilon={evs[0].epsilon:g}, delta={evs[0].delta:g} "
                    f"({type(evs[0]).__name__})" if len(evs) == 1 else
                    f"{len(evs)} releases (epsilon {', '.join(f'{e.epsilon:g}' for e in evs)})")
            raise BudgetExceededError(
                f"{what} would exceed the budget "
                f"(epsilon={self.epsilon:g}, delta={self.delta:g}): spent "
                f"epsilon={self.spent:g}, delta={self.spent_delta:g}; the total after it "
                f"would be epsilon={total[0]:g}, delta={total[1]:g}; "
                f"{self.remaining:g} epsilon left")

    def check(self, event_or_epsilon: Event | float) -> Event | float:
        """Raise BudgetExceededError if spending the event (a float: pure epsilon)
        would exceed the budget; return it (a float validated, an event as is).

        Parameters
        ----------
        event_or_epsilon : PureEvent, GaussianEvent, ObjectiveGaussianEvent, ApproxEvent or float
            The release to check; a float is a pure-epsilon release of that epsilon.

        Returns
        -------
        event or float
            `event_or_epsilon`, validated. Nothing is spent.

        Raises
        ------
        BudgetExceededError
            The release would take the total over the budget.
        ValueError
            An epsilon that is not a positive finite number.
        """
        event = self._validated(event_or_epsilon)
        with self._lock:
            total, _ = self._after([event])
            self._refuse_if_over([event], total)
        return event

    def spend(self, event_or_epsilon: Event | float, label: str | None = None) -> None:
        """Record a release (checks first; refused releases spend nothing).

        Parameters
        ----------
        event_or_epsilon : PureEvent, GaussianEvent, ObjectiveGaussianEvent, ApproxEvent or float
            The release; a float is a pure-epsilon release of that epsilon.
        label : str, optional
            A name for the release, kept in ``history`` with it.

        Raises
        ------
        BudgetExceededError
            The release would take the total over the budget (nothing is spent).
        """
        self.spend_all([event_or_epsilon], label=label)

    def check_all(self, events: Iterable[Event | float]) -> list[Event | float]:
        """check() for several releases made together (e.g. the K models of a
        one-vs-rest fit): all of them fit in the budget, or BudgetExceededError.

        Parameters
        ----------
        events : iterable of events or floats
            The releases (a float: a pure-epsilon release).

        Returns
        -------
        list
            The releases, validated. Nothing is spent.

        Raises
        ------
        BudgetExceededError
            Together they would take the total over the budget.
        """
        events = [self._validated(e) for e in events]
        with self._lock:
            total, _ = self._after(events)
            self._refuse_if_over(events, total)
        return events

    def spend_all(self, events: Iterable[Event | float], label: str | None = None) -> None:
        """Record several releases at once, all or none (checks first).

        Parameters
        ----------
        events : iterable of events or floats
            The releases (a float: a pure-epsilon release).
        label : str, optional
            A name kept in ``history`` with each of them.

        Raises
        ------
        BudgetExceededError
            Together they would take the total over the budget (nothing is spent).
        """
        events = [self._validated(e) for e in events]
        if not events:
            return
        with self._lock:
            total, comp = self._after(events)
            self._refuse_if_over(events, total)
            self._total = total
            self._composition = comp
            self.history.extend((label, ev) for ev in events)

    @staticmethod
    def _validated(event_or_epsilon: Event | float) -> Event | float:
        if isinstance(event_or_epsilon, _EVENT_TYPES):
            return event_or_epsilon
        return check_epsilon(event_or_epsilon, "epsilon")

    # A ledger is shared, never duplicated: sklearn's clone() deep-copies non-estimator
    # parameters, and a copied accountant would let every clone (GridSearchCV,
    # cross_val_score) spend the whole budget again.  Copies are the same object.
    def __copy__(self) -> "BudgetAccountant":
        return self

    def __deepcopy__(self, memo: dict) -> "BudgetAccountant":
        return self

    def __getstate__(self) -> dict:  # pickling (e.g. to another process) drops the lock
        state = self.__dict__.copy()
        del state["_lock"]
        state.pop("_cache", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return (f"BudgetAccountant(epsilon={self.epsilon:g}, delta={self.delta:g}, "
                f"spent={self.spent:g}, spent_delta={self.spent_delta:g})")
