"""``rankci check`` claims on votes (rankci.votes.claims) against a direct computation.

The reference: statsmodels ``Logit`` on the +-1 design (no ties, so BT is exactly that logit)
with statsmodels' cluster-robust covariance by prompt, its ``t_test`` of each contrast
``s_A - s_B - c`` (a z test for a Logit), one-sided p-values, and statsmodels' ``multipletests``
Holm over the family the claims make. Exit codes and formats through the CLI.
"""

import json

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy.stats import norm
from statsmodels.stats.multitest import multipletests

from rankci.cli import main
from rankci.votes import Votes
from rankci.votes.claims import check_vote_claims
from rankci.votes.rank import VotesSpec

NAMES = ["alpha", "beta", "gamma", "delta", "eps"]
TRUE = np.array([1.0, 0.55, 0.5, 0.0, -1.0])


def board(n=6000, seed=7):
    rng = np.random.default_rng(seed)
    m = len(TRUE)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    win_a = rng.random(n) < 1 / (1 + np.exp(-(TRUE[a] - TRUE[b])))
    names = np.array(NAMES)
    return pd.DataFrame(
        {
            "model_a": names[a],
            "model_b": names[b],
            "winner": np.where(win_a, "model_a", "model_b"),
            "prompt": rng.integers(0, 600, n),
        }
    )


FRAME = board()


def votes_of(frame):
    code = {m: k for k, m in enumerate(NAMES)}
    return Votes.from_arrays(
        frame["model_a"].map(code).to_numpy(),
        frame["model_b"].map(code).to_numpy(),
        frame["winner"].map({"model_a": 0, "model_b": 1}).to_numpy(),
        models=NAMES,
        columns={"prompt": frame["prompt"].to_numpy()},
    )


def reference_logit(frame):
    code = {m: k for k, m in enumerate(NAMES)}
    a, b = frame["model_a"].map(code).to_numpy(), frame["model_b"].map(code).to_numpy()
    x = np.zeros((len(frame), len(NAMES)))
    x[np.arange(len(frame)), a] = 1.0
    x[np.arange(len(frame)), b] = -1.0
    y = (frame["winner"] == "model_a").to_numpy(float)
    groups = frame["prompt"].to_numpy()
    return sm.Logit(y, x[:, 1:]).fit(
        disp=0, method="newton", tol=1e-12, cov_type="cluster", cov_kwds={"groups": groups}
    )


def one_sided_p(ref, first, second, margin):
    """p of H: s_first - s_second <= margin by statsmodels' contrast test (a z test)."""
    r = np.zeros(len(NAMES))
    r[NAMES.index(first)] += 1.0
    r[NAMES.index(second)] -= 1.0
    test = ref.t_test((r[1:], margin))
    return float(norm.sf(np.asarray(test.tvalue).item()))


def test_pair_claims_equal_statsmodels_z_tests_and_holm():
    claims = ["alpha > beta + 0.2", "beta > gamma", "eps > delta", "gamma >= delta - 0.1"]
    check = check_vote_claims(votes_of(FRAME), claims, spec=VotesSpec(cluster="prompt"))
    ref = reference_logit(FRAME)
    hyps = [
        ("alpha", "beta", 0.2),
        ("beta", "alpha", -0.2),
        ("beta", "gamma", 0.0),
        ("gamma", "beta", 0.0),
        ("eps", "delta", 0.0),
        ("delta", "eps", 0.0),
        ("gamma", "delta", -0.1),
        ("delta", "gamma", 0.1),
    ]
    p = np.array([one_sided_p(ref, *h) for h in hyps])
    reject, adjusted, _, _ = multipletests(p, alpha=0.05, method="holm")
    expected = []
    for k in range(4):
        support, contra = reject[2 * k], reject[2 * k + 1]
        expected.append("supported" if support else "contradicted" if contra else "not decided")
    assert [r.result for r in check.results] == expected
    assert check.family_size == len(hyps)
    for k, r in enumerate(check.results):
        np.testing.assert_allclose(r.details["pvalue"], p[2 * k], rtol=1e-6, atol=1e-300)
        np.testing.assert_allclose(r.details["adjusted_pvalue"], adjusted[2 * k], rtol=1e-6)
    # the board makes every outcome appear: true claims supported, the false one contradicted
    assert expected == ["supported", "not decided", "contradicted", "supported"]


def test_rank_claims_read_holm_over_all_ordered_pairs():
    check = check_vote_claims(
        votes_of(FRAME), ["alpha is best", "beta in top 2"], spec=VotesSpec(cluster="prompt")
    )
    ref = reference_logit(FRAME)
    pairs = [(a, b) for a in NAMES for b in NAMES if a != b]
    p = np.array([one_sided_p(ref, a, b, 0.0) for a, b in pairs])
    reject = multipletests(p, alpha=0.05, method="holm")[0]
    beaten_by = {m: sum(rej for (a, b), rej in zip(pairs, reject) if b == m) for m in NAMES}
    beats = {m: sum(rej for (a, b), rej in zip(pairs, reject) if a == m) for m in NAMES}
    # rank interval of a model: [1 + certified better, M - certified worse] (no closure needed
    # when the certified set is already transitive, which it is on this board)
    for claim, model, k in (("alpha is best", "alpha", 1), ("beta in top 2", "beta", 2)):
        result = next(r for r in check.results if r.claim.text == claim)
        low, up = 1 + beaten_by[model], len(NAMES) - beats[model]
        assert result.details["rank_interval"] == [low, up]
        want = "supported" if up <= k else "contradicted" if low > k else "not decided"
        assert result.result == want
    assert check.results[0].result == "supported"
    assert check.results[1].result == "not decided"  # beta and gamma are 0.05 apart
    assert check.family_size == len(pairs)


def write(tmp_path):
    path = tmp_path / "votes.csv"
    FRAME.to_csv(path, index=False)
    return path


def test_check_exit_codes_and_target_on_a_vote_file(tmp_path, capsys):
    path = write(tmp_path)
    assert main(["check", str(path), "--claim", "alpha is best"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("rankci check PASS")
    assert "Target: new votes like these" in out
    assert "z tests of Bradley-Terry strength differences" in out
    assert main(["check", str(path), "--claim", "eps > delta", "--format", "json"]) == 1
    payload = json.loads(capsys.readouterr().out)
    assert payload["target"] == "new votes like these"
    assert payload["unit"] == "vote"
    assert payload["claims"][0]["result"] == "contradicted"
    assert payload["spec"]["method"]["flow"] == "votes"
    assert payload["spec"]["method"]["cluster"] == "prompt"
    assert main(["check", str(path), "--claim", "alpha > zeta"]) == 2
    assert "no model 'zeta'" in capsys.readouterr().err
    assert main(["check", str(path), "--claim", "alpha > beta", "--test", "t"]) == 2
    assert "--test, --unit, --missing, --exact-bound-n and --baseline do not apply" in (
        capsys.readouterr().err
    )
    assert main(["check", str(path), "--claim", "alpha > beta", "--exact-bound-n", "30"]) == 2
    assert "do not apply" in capsys.readouterr().err


def test_check_junit_and_markdown_on_votes(tmp_path, capsys):
    path = write(tmp_path)
    assert main(["check", str(path), "--claim", "eps > delta", "--format", "junit"]) == 1
    xml = capsys.readouterr().out
    assert 'failures="1"' in xml and 'type="contradicted"' in xml
    assert '<property name="unit" value="vote" />' in xml
    assert (
        main(["check", str(path), "--votes", "--claim", "alpha is best", "--format", "markdown"])
        == 0
    )
    assert "### rankci check PASS" in capsys.readouterr().out
