"""Sequential composition of epsilon across fits."""
import threading

from dperm._validation import check_epsilon
from dperm.exceptions import BudgetExceededError

__all__ = ["BudgetAccountant"]


class BudgetAccountant:
    """Tracks the total epsilon spent by the fits it is passed to.

    Under sequential composition the releases of k fits on the same data are
    (sum of their epsilons)-DP.  An estimator given `accountant=` asks
    `check(eps)` before it touches the data and calls `spend(eps)` after a
    successful fit; a fit that would exceed the total raises
    BudgetExceededError and spends nothing.

    Parameters
    ----------
    epsilon : float
        Total budget (> 0).
    """

    def __init__(self, epsilon):
        self.epsilon = check_epsilon(epsilon, "epsilon")
        self.spent = 0.0
        self.history = []
        self._lock = threading.Lock()

    @property
    def remaining(self):
        return max(0.0, self.epsilon - self.spent)

    def check(self, epsilon):
        """Raise BudgetExceededError if spending `epsilon` would exceed the total."""
        epsilon = check_epsilon(epsilon, "epsilon")
        # a relative slack so that e.g. ten fits of 0.1 fit in a budget of 1.0
        if self.spent + epsilon > self.epsilon * (1 + 1e-12):
            raise BudgetExceededError(
                f"a fit with epsilon={epsilon:g} would exceed the budget: "
                f"spent {self.spent:g} of {self.epsilon:g}, {self.remaining:g} left")
        return epsilon

    def spend(self, epsilon, label=None):
        """Record a release of `epsilon` (checks first)."""
        with self._lock:
            epsilon = self.check(epsilon)
            self.spent += epsilon
            self.history.append((label, epsilon))

    # A ledger is shared, never duplicated: sklearn's clone() deep-copies non-estimator
    # parameters, and a copied accountant would let every clone (GridSearchCV,
    # cross_val_score) spend the whole budget again.  Copies are the same object.
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __getstate__(self):  # pickling (e.g. to another process) drops the lock
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self):
        return f"BudgetAccountant(epsilon={self.epsilon:g}, spent={self.spent:g})"
