"""Fast Monte-Carlo checks of the anytime guarantee (the full study is validation/monitor_error.py).

All models tied: any certified pair is a false statement. With looks every 10 items the
probability of ever certifying one must stay below alpha (the source reports ~1.6 % with 200
looks); the tests allow alpha + 3 Monte-Carlo standard errors.
"""

import numpy as np
import pytest

from rankci import DominanceCycleError
from rankci.sequential import Monitor

ALPHA = 0.05


def _ever_wrong(monitor, x):
    try:
        monitor.update_block(x)
        return bool(monitor.ranking().dominance.any())
    except DominanceCycleError:
        return True


@pytest.mark.parametrize("certifier", ["exact", "shortcut"])
def test_iid_all_tied_error_stays_below_alpha(certifier):
    rng = np.random.default_rng(123)
    reps, n, m = 150, 400, 4
    wrong = 0
    for _ in range(reps):
        d = rng.normal(size=n)[:, None]
        x = (rng.random((n, m)) < 1 / (1 + np.exp(d - 0.3))).astype(float)
        mon = Monitor(list("abcd"), sampling="iid", certifier=certifier, look_every=10)
        wrong += _ever_wrong(mon, x)
    assert wrong / reps <= ALPHA + 3 * np.sqrt(ALPHA * (1 - ALPHA) / reps)


def test_finite_benchmark_exact_ties_error_stays_below_alpha():
    """Model F: four models with exactly the same mean over a 300-item benchmark, random orders
    up to the very last item (where the offset makes wealths move fastest)."""
    rng = np.random.default_rng(321)
    n, m, reps = 300, 4, 150
    base = np.repeat([1.0, 0.0], [180, 120])
    bench = np.column_stack([rng.permutation(base) for _ in range(m)])
    wrong = 0
    for _ in range(reps):
        mon = Monitor(list("abcd"), n_items=n, certifier="exact", look_every=10)
        wrong += _ever_wrong(mon, bench[rng.permutation(n)])
    assert wrong / reps <= ALPHA + 3 * np.sqrt(ALPHA * (1 - ALPHA) / reps)
