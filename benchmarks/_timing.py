"""The one timing helper of the comparison scripts (the asv suite times itself).

    from _timing import timed       # scripts run as `python benchmarks/NAME.py`

Every script states in its docstring which statistic and clock it reports; this is
where they are computed.
"""
import time

import numpy as np

__all__ = ["timed"]


def timed(fn, reps=1, *, warmup=0, stat="min", clock=time.perf_counter):
    """(seconds, last result) of `reps` timed calls of fn() after `warmup` untimed ones.

    stat: "min" (the least disturbed run, the default) or "median"; clock:
    time.perf_counter (wall, the default) or time.process_time (CPU of this process).
    """
    for _ in range(warmup):
        fn()
    ts, out = [], None
    for _ in range(max(1, int(reps))):
        t0 = clock()
        out = fn()
        ts.append(clock() - t0)
    return (min(ts) if stat == "min" else float(np.median(ts))), out
