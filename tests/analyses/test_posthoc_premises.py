"""Post-hoc premises (issue 25, item 6): Tukey and Nemenyi say when sphericity, equal standard
errors or exchangeability fail, and whether the omnibus test rejected.

The defect: Tukey ran on ChemBench while Mauchly's p < 1e-300, with a pooled SE of 0.0103
against paired SEs of 0.0026-0.0142, without a note. The numbers here are computed again with
numpy from the units matrix (two-way residuals, one paired difference at a time, Mauchly's W on
a contrast basis of its own), never taken from rankci.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from rankci import RankciWarning, Scores
from rankci.analyses.posthoc import SE_FACTOR, nemenyi, tukey_hsd
from rankci.cli import main
from rankci.datasets import load_chembench

DATA = Path(__file__).resolve().parents[2] / "src" / "rankci" / "datasets"
CHEMBENCH = DATA / "chembench.parquet"


@pytest.fixture(scope="module", autouse=True)
def studentized_range_once():
    """The studentized range evaluated once per distinct input in this module.

    On ChemBench (35 models, 595 pairs) Tukey takes scipy's per-pair integration, about 7 s;
    four tests (two through the CLI) ask it the same question. ``tukey_pvalues`` and
    ``studentized_range_critical`` are memoised on their exact arguments (the arrays' bytes),
    so every test still runs the whole of ``tukey_hsd`` (premises, notes, warnings, table) on
    its own data, and gets the very values a fresh evaluation would give; any other input is
    computed afresh.
    """
    from rankci.analyses import posthoc

    def memoised(fn):
        cache = {}

        def key(value):
            if isinstance(value, np.ndarray):
                return (value.dtype.str, value.shape, value.tobytes())
            return (type(value).__name__, value)

        def call(*args, **kwargs):
            k = (tuple(map(key, args)), tuple((n, key(v)) for n, v in sorted(kwargs.items())))
            if k not in cache:
                cache[k] = fn(*args, **kwargs)
            hit = cache[k]
            return hit.copy() if isinstance(hit, np.ndarray) else hit

        return call

    with pytest.MonkeyPatch.context() as patch:
        for name in ("tukey_pvalues", "studentized_range_critical"):
            patch.setattr(posthoc, name, memoised(getattr(posthoc, name)))
        yield


@pytest.fixture(scope="module")
def chembench():
    scores = load_chembench()
    return scores, scores.units("item", "complete").values


def _pooled_se(y: np.ndarray) -> float:
    """sqrt(2 MS_error / n), MS_error from the residuals of the additive two-way model."""
    n, k = y.shape
    resid = y - y.mean(axis=1, keepdims=True) - y.mean(axis=0, keepdims=True) + y.mean()
    ms_error = float(np.sum(resid**2)) / ((n - 1) * (k - 1))
    return float(np.sqrt(2.0 * ms_error / n))


def _paired_ses(y: np.ndarray) -> np.ndarray:
    """sd(y_j - y_l) / sqrt(n), one pair at a time."""
    n, k = y.shape
    return np.array(
        [np.std(y[:, j] - y[:, l], ddof=1) / np.sqrt(n) for j in range(k) for l in range(j + 1, k)]
    )


def _mauchly(y: np.ndarray) -> tuple[float, float]:
    """Mauchly's W (on successive-difference contrasts, orthonormalised by QR) and Box's
    first-order chi-square p-value."""
    n, k = y.shape
    p = k - 1
    diffs = np.eye(k)[:, :-1] - np.eye(k)[:, 1:]  # k x (k - 1), columns orthogonal to 1
    basis, _ = np.linalg.qr(diffs)
    cov = np.cov(y @ basis, rowvar=False)
    sign, logdet = np.linalg.slogdet(cov)
    assert sign > 0
    log_w = logdet - p * np.log(np.trace(cov) / p)
    chi2 = -(n - 1 - (2 * p**2 + p + 2) / (6 * p)) * log_w
    return float(np.exp(log_w)), float(stats.chi2.sf(chi2, p * (p + 1) / 2 - 1))


def _gg_p(y: np.ndarray) -> float:
    """The RM-ANOVA F p-value with Greenhouse-Geisser df, from numpy and scipy."""
    n, k = y.shape
    resid = y - y.mean(axis=1, keepdims=True) - y.mean(axis=0, keepdims=True) + y.mean()
    ss_error = float(np.sum(resid**2))
    ss_model = n * float(np.sum((y.mean(axis=0) - y.mean()) ** 2))
    f = (ss_model / (k - 1)) / (ss_error / ((n - 1) * (k - 1)))
    basis, _ = np.linalg.qr(np.eye(k)[:, :-1] - np.eye(k)[:, 1:])
    cov = np.cov(y @ basis, rowvar=False)
    eps = np.trace(cov) ** 2 / ((k - 1) * np.trace(cov @ cov))
    return float(stats.f.sf(f, (k - 1) * eps, (n - 1) * (k - 1) * eps))


def _additive(n: int, k: int, seed: int, gaps: float = 0.0) -> np.ndarray:
    """Item effects + model effects + i.i.d. normal errors: balanced and spherical."""
    rng = np.random.default_rng(seed)
    return (
        rng.normal(0, 1, (n, 1)) + gaps * np.arange(k)[None, :] + rng.normal(0, 0.5, (n, k))
    )


def test_tukey_on_chembench_warns_about_sphericity_with_both_standard_errors(chembench):
    scores, y = chembench
    with pytest.warns(RankciWarning, match="sphericity") as caught:
        result = tukey_hsd(scores)
    message = str(caught[0].message)
    assert "rankci rank" in message  # says what to use instead
    pre = result.premises
    w, p = _mauchly(y)
    assert pre["sphericity"]["holds"] is False
    assert pre["sphericity"]["W"] == pytest.approx(w, rel=1e-6)
    assert pre["sphericity"]["p"] < 1e-300 and p < 1e-300
    assert pre["balanced"] is True
    assert "35 models" in pre["balance"] and f"{y.shape[0]} items" in pre["balance"]
    paired = _paired_ses(y)
    assert pre["pooled_se"] == pytest.approx(_pooled_se(y), rel=1e-9)
    assert pre["paired_se_min"] == pytest.approx(paired.min(), rel=1e-9)
    assert pre["paired_se_max"] == pytest.approx(paired.max(), rel=1e-9)
    # the numbers: 0.0103 pooled against 0.0026-0.0142
    assert round(pre["pooled_se"], 4) == 0.0103
    assert (round(pre["paired_se_min"], 4), round(pre["paired_se_max"], 4)) == (0.0026, 0.0142)
    assert pre["pooled_se"] / pre["paired_se_min"] > SE_FACTOR
    assert set(result.notes) == {"sphericity", "standard_errors", "omnibus"}
    assert "0.0142" in result.notes["standard_errors"]
    # the table's SE is the pooled one, side by side with the paired range in premises
    assert np.allclose(result.table["se"], pre["pooled_se"])


def test_tukey_records_the_omnibus_p(chembench):
    scores, y = chembench
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankciWarning)
        result = tukey_hsd(scores)
    assert result.omnibus_p == pytest.approx(_gg_p(y), rel=1e-9, abs=1e-300)
    assert result.omnibus_rejected is True
    out = result.to_dict()
    assert out["omnibus_p"] == result.omnibus_p and out["omnibus_rejected"] is True
    assert out["premises"]["sphericity"]["holds"] is False
    json.dumps(out)  # JSON-safe


def test_a_balanced_spherical_design_gives_no_premise_warning():
    y = _additive(300, 5, seed=3, gaps=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RankciWarning)
        result = tukey_hsd(Scores.from_matrix(y, bounds=None))
    w, p = _mauchly(y)
    assert p > 0.05  # i.i.d. errors: sphericity holds
    assert result.premises["sphericity"]["holds"] is True
    assert result.premises["sphericity"]["W"] == pytest.approx(w, rel=1e-6)
    paired = _paired_ses(y)
    assert paired.max() / paired.min() < SE_FACTOR  # near-equal paired SEs
    assert result.premises["pooled_se"] == pytest.approx(_pooled_se(y), rel=1e-9)
    assert set(result.notes) == {"omnibus"}
    assert result.omnibus_rejected is True and result.omnibus_p == pytest.approx(_gg_p(y))


def test_tukey_after_an_omnibus_that_did_not_reject_says_so_without_a_gate():
    y = _additive(200, 4, seed=11)  # every model the same
    p_gg = _gg_p(y)
    assert p_gg > 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("error", RankciWarning)  # informative, not a premise failure
        result = tukey_hsd(Scores.from_matrix(y, bounds=None))
    assert result.omnibus_p == pytest.approx(p_gg)
    assert result.omnibus_rejected is False
    note = result.notes["omnibus"]
    assert "not protected" in note and "on its own" in note and "not rejected" in note


def test_mauchly_undefined_leaves_sphericity_untested():
    y = _additive(4, 6, seed=2)  # fewer items than models: W undefined
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankciWarning)
        result = tukey_hsd(Scores.from_matrix(y, bounds=None))
    assert result.premises["sphericity"]["holds"] is None
    assert "sphericity" not in result.notes
    assert "not defined" in result.premises["sphericity"]["note"]


def test_nemenyi_warns_when_friedman_did_not_reject():
    y = _additive(200, 4, seed=11)
    friedman_p = stats.friedmanchisquare(*y.T).pvalue
    assert friedman_p > 0.05
    with pytest.warns(RankciWarning, match="Friedman's test did not reject"):
        result = nemenyi(Scores.from_matrix(y, bounds=None))
    assert result.omnibus_p == pytest.approx(friedman_p)
    assert result.omnibus_rejected is False
    assert "exchangeable" in result.notes


def test_nemenyi_after_friedman_rejected_has_no_warning():
    y = _additive(200, 4, seed=11, gaps=0.3)
    friedman_p = stats.friedmanchisquare(*y.T).pvalue
    with warnings.catch_warnings():
        warnings.simplefilter("error", RankciWarning)
        result = nemenyi(Scores.from_matrix(y, bounds=None))
    assert result.omnibus_p == pytest.approx(friedman_p, rel=1e-9, abs=1e-300)
    assert result.omnibus_rejected is True and set(result.notes) == {"omnibus"}


def test_cli_posthoc_shows_the_premise_notes(capsys):
    assert main(["omnibus", str(CHEMBENCH), "--posthoc"]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert "Mauchly's test rejects sphericity" in out
    assert "pooled SE of a difference 0.01034, paired SEs 0.002636 to 0.0142" in out
    assert "rankci rank" in out
    assert "rejected equal means at alpha = 0.05" in out
    assert "warning" in captured.err and "sphericity" in captured.err


def test_cli_posthoc_json_records_premises(tmp_path, chembench):
    _, y = chembench
    target = tmp_path / "out.json"
    argv = ["omnibus", str(CHEMBENCH), "--posthoc", "--format", "json", "-o", str(target)]
    assert main(argv) == 0
    posthoc = json.loads(target.read_text())["posthoc"]
    assert posthoc["omnibus_rejected"] is True
    assert posthoc["premises"]["pooled_se"] == pytest.approx(_pooled_se(y), rel=1e-9)
    assert posthoc["premises"]["sphericity"]["holds"] is False
    assert "sphericity" in posthoc["notes"]
