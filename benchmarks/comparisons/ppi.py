"""Judge scores corrected by human labels: rankci's PPI against ppi-python on the same data.

:func:`rankci.analyses.ppi.ppi_scores` fits every model at once (the PPI++ lam of each model, the
rectified units, the three fits); ppi-python (Angelopoulos et al.) fits one model per call,
``ppi_mean_pointestimate`` and ``ppi_mean_ci`` at the same lam. The human scores are the data
set's 0/1 scores, the judge a seeded noisy, biased copy of them, and the same uniformly drawn
10 % of the items are labelled for every model.

At the tuned lam rankci's standard error is ppi-python's CLT one times sqrt(N / (N - 1)) (the
units' sample variance has divisor N - 1; rankci.analyses.ppi, tests/analyses/test_ppi.py), so
the agreement is measured after rescaling rankci's half-width by sqrt((N - 1) / N).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from rankci.analyses.ppi import ppi_scores

from .harness import Dataset, Row, Run, timed

ALPHA = 0.05


def _judged(data: Dataset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(human, judge, labelled): items x models, items x models, items (bool)."""
    rng = np.random.default_rng(20231109)
    human = data.matrix.astype(float)
    n_items, n_models = human.shape
    bias = rng.uniform(-0.1, 0.1, n_models)
    noise = rng.uniform(0.1, 0.4, n_models)
    judge = np.clip(0.2 + 0.6 * human + bias + rng.normal(0, 1, human.shape) * noise, 0, 1)
    labelled = np.zeros(n_items, dtype=bool)
    labelled[rng.choice(n_items, max(30, n_items // 10), replace=False)] = True
    return human, judge, labelled


def ppi_mean(data: Dataset, run: Run) -> list[Row]:
    task = "PPI++ means and 95 % intervals, judge + 10 % human labels"
    human, judge, labelled = _judged(data)
    n_items, n_models = human.shape
    names = data.model_names
    frame = pd.DataFrame(
        {
            "model": np.tile(names, n_items),
            "item": np.repeat([f"q{i}" for i in range(n_items)], n_models),
            "judge": judge.ravel(),
            "human": np.where(labelled[:, None], human, np.nan).ravel(),
        }
    )
    own = timed(task, data, "rankci ppi_scores (lam='auto')", lambda: ppi_scores(frame), run)
    rows = [own]
    fit = own.result
    lams = np.asarray(fit.fits["lam"], dtype=float)
    h, f = human[labelled], judge[labelled]

    def ppi_python():
        from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

        out = np.empty((n_models, 3))
        for j in range(n_models):
            est = ppi_mean_pointestimate(h[:, j], f[:, j], judge[:, j], lam=lams[j])
            lo, hi = ppi_mean_ci(h[:, j], f[:, j], judge[:, j], alpha=ALPHA, lam=lams[j])
            out[j] = float(np.ravel(est)[0]), float(np.ravel(lo)[0]), float(np.ravel(hi)[0])
        return out

    peer = timed(
        task, data, "ppi-python ppi_mean_pointestimate + ppi_mean_ci per model", ppi_python, run
    )
    if peer.result is not None:
        order = [list(fit.models).index(m) for m in names]
        est = np.asarray(fit.fits["ppi"], dtype=float)[order]
        se = np.asarray(fit.fits["ppi_se"], dtype=float)[order]
        half = stats.norm.ppf(1 - ALPHA / 2) * se * np.sqrt((n_items - 1) / n_items)
        mine = np.column_stack([est, est - half, est + half])
        gap = np.abs(mine - peer.result).max(axis=1) / se
        peer.agree(
            "estimate, endpoints / SE",
            float(gap.max()),
            1e-6,
            " (rankci's SE rescaled by sqrt((N-1)/N))",
        )
    rows.append(peer)
    return rows
