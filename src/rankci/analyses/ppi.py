"""Judge scores corrected by human labels: prediction-powered inference (PPI, PPI++) as units.

An LLM judge scores every (model, item); humans score a random subset. The judge alone is
biased, the humans alone are few. PPI combines them: for model j with judge score ``f_ij`` on
all N items, human score ``h_ij`` where item i was labelled (``R_ij = 1``) with known inclusion
probability ``pi_ij`` and weight ``w_ij = R_ij / pi_ij``, the rectified unit score is

    y_ij = lam_j f_ij + gbar_j + w_ij (g_ij - gbar_j),   g_ij = h_ij - lam_j f_ij,

with ``gbar_j = sum_i w_ij g_ij / sum_i w_ij`` the weighted mean of the residuals over the
labelled items (Hajek). Their mean over the N items is

    theta_j = lam_j fbar_j + gbar_j,     fbar_j = (1/N) sum_i f_ij  (all items),

the prediction-powered estimate of model j's mean *on the human scale*: for uniform sampling
(``pi = n_j / N``) it is exactly the classic PPI mean of Angelopoulos et al. (2023), in the
form whose "unlabelled" mean runs over *all* N items, labelled ones included (``ppi-python``'s
``ppi_mean_pointestimate(h_lab, f_lab, f_all, lam=lam)``); for stratified sampling with known
inclusion probabilities it is the Hajek-weighted form. ``lam_j = 0`` is the human-only mean
(``hbar_j``), ``lam_j = 1`` the classic PPI, and ``lam="auto"`` the power-tuned PPI++ choice
(Angelopoulos, Duchi and Zrnic 2023): in this all-items form the variance

    Var(theta_j) ~ (2 lam C - lam^2 V) / N + Var(h - lam f) / n,   C = Cov(h, f), V = Var(f),

is smallest at ``lam = C / V`` (the PPI++ value ``C / ((1 + n/N) V)`` is that of the form with a
separate unlabelled sample), estimated as the weighted least-squares slope of h on f over the
labelled items. At that slope the units' sample variance gives exactly the PPI central-limit
variance: ``s_y^2 / N = (N / (N - 1)) (lam^2 s_f^2 / N + s_g^2 / n)`` (``s^2`` with divisor the
count; ``tests/analyses/test_ppi.py`` checks it against ``ppi-python``'s ``ppi_mean_ci``).

Because every model's ``y_ij`` sits on the same item i, the difference ``y_ij - y_il`` is the
rectified unit of the difference of the two models (each with its own lam): the pairing is
kept, so the paired t test, Holm and max-t of :func:`rankci.rank` certify on
:attr:`PPIScores.scores` as on any score table, and :func:`rankci.score_intervals` gives
the PPI intervals (``method="normal"``). The variance of a unit-level t accounts for the
estimated ``gbar``; the estimated ``lam`` costs a little validity at small n (PPI++ is
asymptotic), measured in validation/ppi_judges.py (``MIN_LABELS``).

References
----------
Angelopoulos, A. N., Bates, S., Fannjiang, C., Jordan, M. I. and Zrnic, T. (2023).
Prediction-powered inference. Science 382(6671), 669-674.
Angelopoulos, A. N., Duchi, J. C. and Zrnic, T. (2023). PPI++: Efficient prediction-powered
inference. arXiv:2311.01453.
Boyeau, P., Angelopoulos, A. N., Yosef, N., Malik, J. and Jordan, M. I. (2024). AutoEval done
right: using synthetic data for model evaluation. arXiv:2403.07008.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy import stats

from rankci._base import RankciWarning, check_alpha, check_choice, jsonable
from rankci.data import Scores
from rankci.evidence.moments import variance_is_zero
from rankci.evidence.pairwise import Pairwise

__all__ = [
    "MIN_LABELS",
    "MIN_GAIN",
    "SAMPLINGS",
    "PPIScores",
    "ppi_scores",
    "ppi_labels_needed",
    "ppi_pairwise",
]

#: Below this many human labels for a model, PPI++'s estimated lam costs coverage: in
#: validation/ppi_judges.py the 95 % intervals covered 0.86 at 10 labels, 0.90-0.91 at 20,
#: 0.92 at 30 (0.93-0.95 at 50, 0.95 from 100), against 0.91-0.92, 0.92-0.93, 0.93-0.95 with the
#: oracle lam or lam = 1: a RankciWarning and ``warnings`` say so.
MIN_LABELS = 50

#: PPI "gains nothing" when its variance is not at least this factor below the human-only one
#: (effective labels < MIN_GAIN x labels): the judge adds (almost) no information.
MIN_GAIN = 1.1

#: How the labelled subset was drawn.
SAMPLINGS = ("uniform", "stratified")


@dataclass(frozen=True, repr=False, eq=False)
class PPIScores:
    """Three fits of every model's human-scale mean: judge only, human only and PPI.

    Attributes
    ----------
    scores : Scores
        The rectified PPI units ``y_ij`` (N items x M models): give it to :func:`rankci.rank`
        (paired t, Holm or max-t) or :func:`rankci.score_intervals` (``method="normal"``).
    judge_scores : Scores
        The judge scores ``f_ij`` on all N items (biased: the judge's scale, not the humans').
    human_scores : Scores
        The human-only units (``lam = 0``: ``hbar_j + w_ij (h_ij - hbar_j)``; their mean is the
        human-only estimate, their t the human-only test on the same N rows).
    models : tuple of str
    n_items : int
        N, the items every model's judge scored.
    n_labelled : ndarray (M,) of int
        Human labels per model.
    lam : ndarray (M,)
        The power-tuning parameter of each model (``"auto"``: the weighted LS slope).
    corr : ndarray (M,)
        Weighted correlation of human and judge scores over the labelled items.
    sampling : {"uniform", "stratified"}
    inclusion : str or None
        The column of inclusion probabilities (stratified sampling).
    fits : DataFrame
        One row per model: ``judge``, ``judge_se``, ``human``, ``human_se``, ``ppi``, ``ppi_se``,
        ``n_labelled``, ``lam``, ``corr``, ``effective_labels``.
    warnings : tuple of str
        Every warning raised while fitting (labels too few, no gain), JSON-safe.
    """

    scores: Scores
    judge_scores: Scores
    human_scores: Scores
    models: tuple[str, ...]
    n_items: int
    n_labelled: np.ndarray
    lam: np.ndarray
    corr: np.ndarray
    sampling: str
    inclusion: str | None
    fits: pd.DataFrame
    lam_rule: str = "auto"
    warnings: tuple[str, ...] = field(default_factory=tuple)
    arrays: dict = field(default_factory=dict)  # F, H, W (N x M): the design, for ppi_pairwise

    @property
    def effective_labels(self) -> np.ndarray:
        """``n_labelled x Var(human only) / Var(PPI)``: the human labels PPI is worth."""
        return self.fits["effective_labels"].to_numpy()

    def intervals(self, alpha: float = 0.05) -> pd.DataFrame:
        """Normal intervals of the three fits side by side (marginal, each at ``1 - alpha``).

        ``judge_lower/upper`` is an interval for the judge's mean, *not* for the human-scale
        mean: it is biased by the judge's bias.
        """
        alpha = check_alpha(alpha)
        z = stats.norm.ppf(1 - alpha / 2)
        out = self.fits.copy()
        for fit in ("judge", "human", "ppi"):
            out[f"{fit}_lower"] = out[fit] - z * out[f"{fit}_se"]
            out[f"{fit}_upper"] = out[fit] + z * out[f"{fit}_se"]
        return out

    def to_frame(self) -> pd.DataFrame:
        """:attr:`fits`, one row per model."""
        return self.fits.copy()

    def to_dict(self) -> dict:
        return jsonable(
            {
                "models": list(self.models),
                "n_items": self.n_items,
                "sampling": self.sampling,
                "inclusion": self.inclusion,
                "lam_rule": self.lam_rule,
                "fits": self.fits.to_dict(orient="records"),
                "warnings": list(self.warnings),
            }
        )

    def __repr__(self) -> str:
        n = self.n_labelled
        gained = self.effective_labels / np.maximum(n, 1)
        return (
            f"PPIScores({len(self.models)} models, {self.n_items} items, labels per model "
            f"{int(n.min())}-{int(n.max())}, {self.sampling} sampling, lam {self.lam_rule}, "
            f"effective labels x{np.nanmin(gained):.2f}-{np.nanmax(gained):.2f})"
        )


def ppi_scores(
    data: pd.DataFrame | str | os.PathLike,
    *,
    judge: str = "judge",
    human: str = "human",
    model: str = "model",
    item: str = "item",
    cluster: str | None = None,
    sampling: str = "uniform",
    inclusion: str | None = None,
    lam: str | float | dict = "auto",
    bounds: tuple[float, float] | None = (0.0, 1.0),
) -> PPIScores:
    """Every model's mean on the human scale from judge scores and a human-labelled subset.

    The rectified units (module docstring) ``y_ij = lam_j f_ij + gbar_j + w_ij (g_ij - gbar_j)``,
    ``g = h - lam f``, ``w = R / pi``: their mean is the PPI estimate of model j's human-scale
    mean, their paired differences the PPI estimates of the differences, so
    ``rankci.rank(result.scores)`` gives PPI rank intervals (Holm or max-t on the paired t).

    Parameters
    ----------
    data : DataFrame or path
        A long table: one row per (model, item) with the judge's score in ``judge`` (every
        row) and the human score in ``human`` (empty where the item was not labelled for that
        model).
    judge, human, model, item : str
        Column names.
    cluster : str, optional
        A cluster column, carried into the unit tables (for ``covariance="cluster"``).
    sampling : {"uniform", "stratified"}
        How the labelled subset was drawn: uniformly at random (each model's inclusion
        probability estimated as ``n_j / N``: the classic PPI), or with known inclusion
        probabilities per row, in the column ``inclusion``.
    inclusion : str, optional
        With ``sampling="stratified"``: the column of each row's probability (in (0, 1]) of
        having been labelled; needed on the labelled rows.
    lam : "auto", float or dict
        ``"auto"`` (PPI++): each model's lam is the weighted least-squares slope of h on f
        over its labelled items, the variance-minimising value of this all-items form. A number:
        that lam for every model (1 is the classic PPI, 0 the human-only mean). A dict: one
        number per model (for example lam chosen on other data).
    bounds : (float, float) or None
        The score range; a judge or human score outside it is an error (None: any finite).

    Returns
    -------
    PPIScores

    Raises
    ------
    ValueError
        A missing column (naming it), a judge score missing for some (model, item), a human
        score outside ``bounds`` (naming the row), a model without human labels or with one,
        an inclusion probability outside (0, 1].

    Warns
    -----
    RankciWarning
        A model with fewer than :data:`MIN_LABELS` labels (the asymptotics are fragile); a judge
        so weakly correlated with the humans that PPI gains less than ``MIN_GAIN`` x the
        labels ("PPI gains nothing over human-only: corr = ..."); a judge constant on the
        labelled items (lam = 0).

    References
    ----------
    Angelopoulos, A. N., Bates, S., Fannjiang, C., Jordan, M. I. and Zrnic, T. (2023).
    Prediction-powered inference. Science 382(6671), 669-674.
    Angelopoulos, A. N., Duchi, J. C. and Zrnic, T. (2023). PPI++: Efficient prediction-powered
    inference. arXiv:2311.01453.
    Boyeau, P., Angelopoulos, A. N., Yosef, N., Malik, J. and Jordan, M. I. (2024). AutoEval
    done right: using synthetic data for model evaluation. arXiv:2403.07008.

    Examples
    --------
    >>> import numpy as np, pandas as pd, rankci
    >>> rng = np.random.default_rng(0)
    >>> n_items, models = 400, ["a", "b", "c"]
    >>> truth = rng.uniform(0.2, 0.8, (n_items, 1)) + np.array([0.1, 0.0, -0.1])
    >>> human = np.clip(truth + rng.normal(0, 0.1, truth.shape), 0, 1)
    >>> noise = rng.normal(0, 0.05, truth.shape)
    >>> judge = np.clip(human + np.array([-0.1, 0.1, 0.05]) + noise, 0, 1)
    >>> human[rng.random(n_items) > 0.25] = np.nan   # a quarter of the items labelled
    >>> frame = pd.DataFrame({"model": np.tile(models, n_items),
    ...                       "item": np.repeat(np.arange(n_items), 3),
    ...                       "judge": judge.ravel(), "human": human.ravel()})
    >>> fit = ppi_scores(frame)
    >>> fit.fits[["model", "n_labelled"]].to_dict("list")
    {'model': ['a', 'b', 'c'], 'n_labelled': [99, 99, 99]}
    >>> bool((fit.fits["ppi_se"] < fit.fits["human_se"]).all())
    True
    >>> rankci.rank(fit.scores).lower.tolist()
    [1, 2, 3]
    """
    frame = _read_frame(data)
    check_choice("sampling", sampling, SAMPLINGS)
    lam_rule = _check_lam(lam)
    for role, column in {"judge": judge, "human": human}.items():
        if column not in frame.columns:
            available = ", ".join(repr(str(c)) for c in frame.columns)
            raise ValueError(
                f"the {role} column {column!r} is not in the table; columns are: {available}"
            )
    if sampling == "stratified" and inclusion is None:
        raise ValueError(
            'sampling="stratified" needs inclusion=, the column of inclusion probabilities'
        )
    if sampling == "uniform" and inclusion is not None:
        raise ValueError(
            'inclusion= is the column of sampling="stratified"; with '
            'sampling="uniform" the inclusion probability is n_labelled / N'
        )
    if inclusion is not None and inclusion not in frame.columns:
        raise ValueError(f"the inclusion column {inclusion!r} is not in the table")
    frame = frame.reset_index(drop=True)
    judged = Scores.from_frame(
        frame, model=model, item=item, score=judge, cluster=cluster, bounds=bounds
    )
    rows_h = _human_values(frame, human, model, item, bounds)
    models, items = judged.models, judged.items
    n_items, n_models = len(items), len(models)
    F = np.full((n_items, n_models), np.nan)
    F[judged.item_code, judged.model_code] = judged.score
    _refuse_missing_judge(F, models, items, judge)
    H = np.full_like(F, np.nan)
    H[judged.item_code, judged.model_code] = rows_h
    labelled = np.isfinite(H)
    n_lab = labelled.sum(axis=0)
    for j in range(n_models):
        if n_lab[j] < 2:
            raise ValueError(
                f"model {models[j]!r} has {'no' if n_lab[j] == 0 else 'one'} human label"
                f"{'s' if n_lab[j] == 0 else ''} in the {human!r} column; PPI needs at least "
                "two labelled items per model (and the study asks for "
                f"{MIN_LABELS})"
            )
    if sampling == "uniform":
        W = np.where(labelled, n_items / n_lab, 0.0)
    else:
        pi = np.full_like(F, np.nan)
        pi[judged.item_code, judged.model_code] = _inclusion_values(frame, inclusion, rows_h)
        W = np.where(labelled, 1.0 / np.where(labelled, pi, 1.0), 0.0)

    lam_values, corr, notes = _lambda(F, H, W, labelled, lam, models)
    Y, means = rectified_units(F, H, W, lam_values)
    Yh, _ = rectified_units(F, H, W, np.zeros(n_models))
    se = _se(Y)
    se_h = _se(Yh)
    fbar = F.mean(axis=0)
    hbar = _wmean(np.where(labelled, H, 0.0), W)
    width = float(np.abs(Y).max() + np.abs(Yh).max() + 1.0)
    zero = variance_is_zero(se**2, width)
    with np.errstate(invalid="ignore", divide="ignore"):
        effective = np.where(zero, np.nan, n_lab * se_h**2 / np.where(zero, 1.0, se**2))
    notes += [
        f"the PPI units of model {models[j]!r} do not vary (its {int(n_lab[j])} human labels "
        "agree with the judge exactly, or are all equal with lam = 0): its standard error is 0, "
        "an interval of zero width the data do not support; label more items"
        for j in np.flatnonzero(zero)
    ]
    notes += _warnings(models, n_lab, effective, corr)
    for message in notes:
        warnings.warn(message, RankciWarning, stacklevel=2)
    fits = pd.DataFrame(
        {
            "model": list(models),
            "judge": fbar,
            "judge_se": _se(F),
            "human": hbar,
            "human_se": se_h,
            "ppi": means,
            "ppi_se": se,
            "n_labelled": n_lab.astype(int),
            "lam": lam_values,
            "corr": corr,
            "effective_labels": effective,
        }
    )
    clusters = None
    if judged.clusters is not None:
        clusters = np.asarray(judged.clusters, dtype=object)[judged.item_cluster]
    record = {
        "sampling": sampling,
        "inclusion": inclusion,
        "lam": lam_rule,
        "n_items": n_items,
        "n_labelled": {m: int(k) for m, k in zip(models, n_lab)},
    }

    def table(values: np.ndarray, fit: str, box: tuple | None) -> Scores:
        made = Scores.from_matrix(values, models=models, items=items, clusters=clusters, bounds=box)
        return replace(made, notes={**made.notes, "ppi": {**record, "fit": fit}})

    return PPIScores(
        scores=table(Y, "ppi", None),
        judge_scores=table(F, "judge", bounds),
        human_scores=table(Yh, "human", None),
        models=models,
        n_items=n_items,
        n_labelled=n_lab.astype(int),
        lam=lam_values,
        corr=corr,
        sampling=sampling,
        inclusion=inclusion,
        fits=fits,
        lam_rule=lam_rule,
        warnings=tuple(notes),
        arrays={"F": F, "H": H, "W": W},
    )


def rectified_units(
    F: np.ndarray, H: np.ndarray, W: np.ndarray, lam: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The rectified units ``y = lam f + gbar + w (g - gbar)`` and their means, all models at once.

    ``F`` (N x M) judge scores, ``H`` human scores (NaN where unlabelled), ``W`` the weights
    ``R / pi`` (0 where unlabelled), ``lam`` (M,). ``gbar`` is the W-weighted mean of
    ``g = h - lam f`` over the labelled items; the mean of the units is ``lam fbar + gbar``.

    Examples
    --------
    >>> F = np.array([[0.5], [0.7], [0.2], [0.9]])
    >>> H = np.array([[1.0], [np.nan], [0.0], [np.nan]])
    >>> W = np.array([[2.0], [0.0], [2.0], [0.0]])
    >>> y, mean = rectified_units(F, H, W, np.array([1.0]))
    >>> round(float(mean[0]), 4)   # 0.575 + ((1 - 0.5) + (0 - 0.2)) / 2
    0.725
    """
    labelled = W > 0
    G = np.where(labelled, H - lam * F, 0.0)
    gbar = _wmean(G, W)
    Y = lam * F + gbar + W * np.where(labelled, G - gbar, 0.0)
    return Y, lam * F.mean(axis=0) + gbar


def ppi_labels_needed(
    width: float,
    *,
    sd_human: float,
    corr: float,
    n_items: int,
    alpha: float = 0.05,
) -> int:
    """Human labels a model needs for a PPI interval of total ``width`` (tuned lam).

    At the tuned ``lam = C / V`` the PPI variance is
    ``Var = sd_h^2 (rho^2 / N + (1 - rho^2) / n)`` (module docstring, with ``C = rho sd_h sd_f``),
    so a half-width ``w / 2 = z sqrt(Var)`` needs

        n = (1 - rho^2) sd_h^2 / ((w / (2 z))^2 - rho^2 sd_h^2 / N).

    A width below ``2 z rho sd_h / sqrt(N)`` (the judge's own noise on N items) cannot be
    reached with any n, nor one that needs more labels than the N items: a ValueError says so.

    Examples
    --------
    >>> ppi_labels_needed(0.1, sd_human=0.5, corr=0.0, n_items=10_000)  # human only: 4z^2 sd^2/w^2
    385
    >>> ppi_labels_needed(0.1, sd_human=0.5, corr=0.8, n_items=10_000)
    142
    """
    alpha = check_alpha(alpha)
    if not (np.isfinite(width) and width > 0):
        raise ValueError(f"width must be a positive number, got {width!r}")
    if not -1 <= corr <= 1:
        raise ValueError(f"corr must be in [-1, 1], got {corr!r}")
    z = stats.norm.ppf(1 - alpha / 2)
    room = (width / (2 * z)) ** 2 - corr**2 * sd_human**2 / n_items
    if room <= 0:
        floor = 2 * z * abs(corr) * sd_human / np.sqrt(n_items)
        raise ValueError(
            f"width {width:g} is not reachable with {n_items} judged items: even with every item "
            f"labelled the PPI interval is wider than {floor:.4g}; judge more items"
        )
    n = int(np.ceil((1 - corr**2) * sd_human**2 / room - 1e-9))
    if n > n_items:
        raise ValueError(
            f"width {width:g} needs {n} human labels, more than the {n_items} judged items; "
            "judge (and label) more items"
        )
    return max(n, 2)


def ppi_pairwise(fit: PPIScores, delta: float = 0.0) -> Pairwise:
    """PPI++ evidence for every ordered pair with its own lam: the lam of the difference.

    For the pair (j, l), ``f_d = f_j - f_l`` and ``h_d = h_j - h_l`` on the labelled items
    (the same for every model), the tuned ``lam_jl = Cov_w(h_d, f_d) / Var_w(f_d)`` and the
    rectified difference units ``d_i = lam_jl f_d,i + gbar_d + w_i (g_d,i - gbar_d)``
    (``g_d = h_d - lam_jl f_d``) give the estimate ``theta_jl = mean_i d_i`` and the paired t
    ``(theta_jl - delta) / (s_d / sqrt(N))`` with N - 1 df, exactly as the paired t on those
    units; all pairs at once from M x M weighted moment matrices, without forming the units:

        sum_i (d_i - dbar)^2 = lam^2 N Var(f_d) + sum_i w_i^2 (g_d,i - gbar_d)^2

    (the cross term vanishes at the tuned lam). A model's own lam (:func:`ppi_scores`) is the
    right one for its mean, not for a difference: with a judge whose noise is independent
    across models, ``lam_j f_j - lam_l f_l`` carries both models' noise, which the per-pair
    lam shrinks away (validation/ppi_judges.py). Certify with
    :func:`rankci.certify.holm.certify_holm` (Holm or Bonferroni); max-t needs the joint law of
    the means, which the per-model units of ``fit.scores`` give.

    Parameters
    ----------
    fit : PPIScores
        From :func:`ppi_scores`, every model labelled on the same items with the same weights.
    delta : float, default 0
        Indifference margin of ``H_jl: theta_j - theta_l <= delta``.

    Returns
    -------
    Pairwise
        ``test = "ppi++ t (lam per pair)"``, ``options["lam"]`` the M x M lam (as lists).

    References
    ----------
    Angelopoulos, A. N., Duchi, J. C. and Zrnic, T. (2023). PPI++: Efficient prediction-powered
    inference. arXiv:2311.01453.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from rankci.certify.holm import certify_holm
    >>> rng = np.random.default_rng(1)
    >>> p = np.clip(rng.uniform(0.2, 0.8, (600, 1)) + [0.1, 0.05, 0.0], 0, 1)
    >>> human = np.clip(p + rng.normal(0, 0.05, p.shape), 0, 1)
    >>> judge = np.clip(p + [0.0, 0.1, 0.0] + rng.normal(0, 0.15, p.shape), 0, 1)
    >>> human[rng.random(600) > 0.3] = np.nan
    >>> frame = pd.DataFrame({"model": np.tile(["a", "b", "c"], 600),
    ...                       "item": np.repeat(np.arange(600), 3),
    ...                       "judge": judge.ravel(), "human": human.ravel()})
    >>> evidence = ppi_pairwise(ppi_scores(frame))
    >>> certify_holm(evidence).ranking().lower.tolist()
    [1, 2, 3]
    """
    F, H, W = fit.arrays["F"], fit.arrays["H"], fit.arrays["W"]
    delta = float(delta)
    same = (W == W[:, :1]).all(axis=0)
    if not same.all():
        j = int(np.flatnonzero(~same)[0])
        raise ValueError(
            f"ppi_pairwise needs the same labelled items (and inclusion probabilities) for "
            f"every model; model {fit.models[j]!r}'s differ from model {fit.models[0]!r}'s. "
            "Use the per-model units (fit.scores) instead"
        )
    n_items, m = F.shape
    w = W[:, 0]
    lab = w > 0
    wl, Fl, Hl = w[lab], F[lab], H[lab]
    total = wl.sum()
    Fc = Fl - (wl @ Fl) / total
    Hc = Hl - (wl @ Hl) / total

    def pairs(S: np.ndarray) -> np.ndarray:  # Var/Cov of differences: S_jj + S_ll - S_jl - S_lj
        d = np.diag(S)
        return d[:, None] + d[None, :] - S - S.T

    V = pairs((Fc.T * wl) @ Fc / total)  # Var_w(f_j - f_l)
    C = pairs((Hc.T * wl) @ Fc / total)  # Cov_w(h_j - h_l, f_j - f_l)
    scale = np.abs(F).max() + np.abs(Hl).max() + 1.0
    flat = V <= 64 * np.finfo(float).eps * scale**2
    with np.errstate(invalid="ignore", divide="ignore"):
        lam = np.where(flat, 0.0, C / np.where(flat, 1.0, V))
    fbar = F.mean(axis=0)
    fw, hw = (wl @ Fl) / total, (wl @ Hl) / total
    estimate = (
        lam * (fbar[:, None] - fbar[None, :])
        + (hw[:, None] - hw[None, :])
        - lam * (fw[:, None] - fw[None, :])
    )
    w2 = wl**2
    Qhh = pairs((Hc.T * w2) @ Hc)
    Qhf = pairs((Hc.T * w2) @ Fc)
    Qff = pairs((Fc.T * w2) @ Fc)
    Fa = F - fbar
    S = pairs(Fa.T @ Fa)  # sum over all N items of (f_d - fbar_d)^2
    ss = lam**2 * S + Qhh - 2 * lam * Qhf + lam**2 * Qff
    var = np.maximum(ss, 0.0) / (n_items * (n_items - 1))
    se = np.sqrt(var)
    zero = variance_is_zero(var, scale * w.max())
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(zero, np.nan, (estimate - delta) / np.where(zero, 1.0, se))
    pvalue = np.where(zero, 1.0, stats.t.sf(t, n_items - 1))
    off = ~np.eye(m, dtype=bool)
    nan = np.where(off, 1.0, np.nan)
    return Pairwise(
        models=fit.models,
        test="ppi++ t (lam per pair)",
        delta=delta,
        estimate=estimate * nan,
        statistic=t * nan,
        pvalue=pvalue * nan,
        n=np.where(off, n_items, 0),
        se=se * nan,
        df=np.where(off, n_items - 1.0, np.nan),
        unit="item",
        missing="complete",
        options={"lam": jsonable(np.where(off, lam, np.nan)), "n_labelled": int(lab.sum())},
        excluded={},
        score=fit.fits["ppi"].to_numpy(),
        n_units=n_items,
        smallest_pvalue=0.0,
    )


# ---------------------------------------------------------------------------------- helpers


def _read_frame(data: object) -> pd.DataFrame:
    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, Scores):
        raise ValueError(
            "ppi_scores needs the long table with the judge and human columns (a DataFrame or a "
            "file), not Scores, which hold one score per (model, item)"
        )
    from pathlib import Path

    from rankci.io import read_table

    path = Path(data)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {str(path)!r}")
    suffix = path.suffix.lower().lstrip(".")
    return read_table(
        path, {"tsv": "tsv", "parquet": "parquet", "jsonl": "jsonl"}.get(suffix, "csv")
    )


def _check_lam(lam: object) -> str:
    if isinstance(lam, str):
        if lam != "auto":
            raise ValueError(f'lam must be "auto", a number or a dict model -> number, got {lam!r}')
        return "auto"
    values = list(lam.values()) if isinstance(lam, dict) else [lam]
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ValueError(
                f'lam must be "auto", a number or a dict model -> number, got {value!r}'
            )
        if not np.isfinite(value):
            raise ValueError(f"lam must be finite, got {value!r}")
    if isinstance(lam, dict):
        return "given per model"
    return f"{float(lam):g}"


def _row_words(frame: pd.DataFrame, row: int, model: str, item: str) -> str:
    return f"row {row} (model {frame.at[row, model]!r}, item {frame.at[row, item]!r})"


def _human_values(
    frame: pd.DataFrame, human: str, model: str, item: str, bounds: tuple | None
) -> np.ndarray:
    """The human column as floats, NaN where empty; a bad value names its row."""
    raw = frame[human]
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float, copy=True)
    empty = raw.isna().to_numpy() | (raw.astype(str).str.strip() == "").to_numpy()
    bad = np.flatnonzero(~empty & ~np.isfinite(values))
    if bad.size:
        r = int(bad[0])
        raise ValueError(
            f"the human column {human!r} has a value that is not a finite number at "
            f"{_row_words(frame, r, model, item)}: {raw.iloc[r]!r}"
        )
    values[empty] = np.nan
    if bounds is not None:
        lo, hi = bounds
        out = np.flatnonzero(np.isfinite(values) & ((values < lo) | (values > hi)))
        if out.size:
            r = int(out[0])
            raise ValueError(
                f"the human column {human!r} has {values[r]:g} at "
                f"{_row_words(frame, r, model, item)}, outside the score range [{lo:g}, {hi:g}] "
                f"({out.size} such rows); pass bounds= for another range"
            )
    return values


def _inclusion_values(frame: pd.DataFrame, inclusion: str, human: np.ndarray) -> np.ndarray:
    pi = pd.to_numeric(frame[inclusion], errors="coerce").to_numpy(dtype=float)
    labelled = np.isfinite(human)
    bad = np.flatnonzero(labelled & ~((pi > 0) & (pi <= 1)))
    if bad.size:
        r = int(bad[0])
        raise ValueError(
            f"the inclusion column {inclusion!r} must hold a probability in (0, 1] on every "
            f"labelled row; row {r + 2} has {frame[inclusion].iloc[r]!r}"
        )
    return pi


def _refuse_missing_judge(F: np.ndarray, models: tuple, items: tuple, judge: str) -> None:
    missing = ~np.isfinite(F)
    if missing.any():
        i, j = np.argwhere(missing)[0]
        raise ValueError(
            f"the judge column {judge!r} has no score for model {models[j]!r} on item "
            f"{items[i]!r} ({int(missing.sum())} such (model, item) cells); PPI needs a judge "
            "score for every model on every item"
        )


def _wmean(X: np.ndarray, W: np.ndarray) -> np.ndarray:
    return (W * X).sum(axis=0) / W.sum(axis=0)


def _se(Y: np.ndarray) -> np.ndarray:
    return Y.std(axis=0, ddof=1) / np.sqrt(Y.shape[0])


def _lambda(
    F: np.ndarray, H: np.ndarray, W: np.ndarray, labelled: np.ndarray, lam: object, models: tuple
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Per model: lam (the W-weighted LS slope of h on f, or the given number), the weighted
    correlation of h and f over the labelled items, and the warnings."""
    Hl = np.where(labelled, H, 0.0)
    fw, hw = _wmean(F * labelled, W), _wmean(Hl, W)
    dF, dH = np.where(labelled, F - fw, 0.0), np.where(labelled, Hl - hw, 0.0)
    cov = (W * dF * dH).sum(axis=0)
    var_f = (W * dF**2).sum(axis=0)
    var_h = (W * dH**2).sum(axis=0)
    width = np.nanmax(np.abs(F)) + np.nanmax(np.abs(Hl)) + 1.0
    flat_f = var_f <= 64 * np.finfo(float).eps * width**2 * W.sum(axis=0)
    flat_h = var_h <= 64 * np.finfo(float).eps * width**2 * W.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = np.where(flat_f | flat_h, 0.0, cov / np.sqrt(var_f * var_h))
        slope = np.where(flat_f, 0.0, cov / np.where(flat_f, 1.0, var_f))
    notes = [
        f"the judge scores of model {models[j]!r} are constant on its labelled items, so they "
        "carry no information about the human scores there: lam = 0 (the human-only mean)"
        for j in np.flatnonzero(flat_f)
    ]
    if isinstance(lam, str):
        return slope, corr, notes
    if isinstance(lam, dict):
        unknown = sorted(set(map(str, lam)) - set(models))
        if unknown:
            raise ValueError(f"lam names model {unknown[0]!r}, which is not in the table")
        absent = [m for m in models if m not in lam]
        if absent:
            raise ValueError(f"lam gives no value for model {absent[0]!r}")
        return np.array([float(lam[m]) for m in models]), corr, []
    return np.full(F.shape[1], float(lam)), corr, []


def _warnings(models: tuple, n_lab: np.ndarray, effective: np.ndarray, corr: np.ndarray) -> list:
    out = []
    few = np.flatnonzero(n_lab < MIN_LABELS)
    if few.size:
        names = ", ".join(f"{models[j]!r} ({int(n_lab[j])})" for j in few[:5])
        more = f" and {few.size - 5} more" if few.size > 5 else ""
        out.append(
            f"fewer than {MIN_LABELS} human labels for {names}{more}: the PPI intervals are "
            "asymptotic and the tuned lam is estimated from these labels; in "
            "validation/ppi_judges.py the 95% intervals covered 0.86 at 10 labels, 0.90 at 20 "
            "and 0.92 at 30 (0.91, 0.92 and 0.93 with lam=1, nothing estimated); label more "
            "items, or use lam=1"
        )
    weak = np.flatnonzero(np.isfinite(effective) & (effective < MIN_GAIN * n_lab))
    for j in weak:
        out.append(
            f"PPI gains nothing over human-only for model {models[j]!r}: corr = {corr[j]:.2f} "
            f"between judge and human scores, effective labels {effective[j]:.1f} from "
            f"{int(n_lab[j])} labels; the judge adds (almost) no information"
        )
    return out
