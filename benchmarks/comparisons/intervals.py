"""Score intervals: rankci's bootstrap against scipy.stats.bootstrap, and rankci's clustered
standard errors against statsmodels OLS with a cluster-robust covariance."""

from __future__ import annotations

import numpy as np

import rankci

from .harness import Dataset, Row, Run, scaled, timed

RESAMPLES = 1_000
#: cells of one scipy batch (resamples x items x models): rankci's own chunk size, 16 M cells
BATCH_CELLS = 16_000_000


def bootstrap(data: Dataset, run: Run) -> list[Row]:
    task = f"percentile bootstrap score intervals ({RESAMPLES:,} resamples)"
    scores = data.scores
    own = timed(
        task,
        data,
        "rankci score_intervals",
        lambda: rankci.score_intervals(scores, "bootstrap", reps=RESAMPLES, rng=1, verdict=False),
        run,
    )
    rows = [own]
    batch = max(1, BATCH_CELLS // data.matrix.size)

    def scipy_bootstrap():
        from scipy import stats

        return stats.bootstrap(
            (data.matrix,),
            np.mean,
            axis=0,
            vectorized=True,
            n_resamples=RESAMPLES,
            batch=batch,
            method="percentile",
            paired=False,
            rng=np.random.default_rng(1),
        )

    peer = timed(task, data, f"scipy.stats.bootstrap (axis=0, batch={batch})", scipy_bootstrap, run)
    if peer.result is not None:
        interval = peer.result.confidence_interval
        gap = (
            np.maximum(
                np.abs(interval.low - own.result.lower), np.abs(interval.high - own.result.upper)
            )
            / own.result.se
        )
        # two independent sets of 1,000 resamples: the endpoints differ by Monte-Carlo error,
        # about 0.1 standard errors; half a standard error would mean a different interval
        peer.agree("endpoint / SE", float(gap.max()), 0.5, " (Monte Carlo)")
    rows.append(peer)
    return rows


def clustered_se(data: Dataset, run: Run) -> list[Row]:
    task = "cluster-robust standard errors of the means"
    scores = data.scores
    own = timed(
        task,
        data,
        "rankci score_intervals(method='cluster')",
        lambda: rankci.score_intervals(scores, "cluster", small_sample=True, verdict=False),
        run,
    )
    rows = [own]
    x, groups = data.matrix, data.clusters

    def ols_loop(k: int) -> np.ndarray:
        import statsmodels.api as sm

        ones = np.ones((len(x), 1))
        return np.array(
            [
                sm.OLS(x[:, j], ones).fit(cov_type="cluster", cov_kwds={"groups": groups}).bse[0]
                for j in range(k)
            ]
        )

    peer = scaled(
        task,
        data,
        "statsmodels OLS(cov_type='cluster') per model",
        ols_loop,
        data.n_models,
        run,
        probe=4,
        unit="models",
    )
    if peer.result is not None:
        k, se = peer.result if peer.extrapolated else (data.n_models, peer.result)
        # statsmodels' default correction G/(G-1) (N-1)/(N-K) is rankci's "cadjust" for K = 1
        relative = np.abs(se - own.result.se[:k]) / own.result.se[:k]
        peer.agree("SE (relative)", float(relative.max()), 1e-9)
    rows.append(peer)
    return rows
