"""`rankci scores` and `rankci plan`: the JSON schema of the issue, tables and errors."""

import json
from pathlib import Path

import pytest

import rankci
from rankci.analyses.intervals import score_intervals
from rankci.cli import main

ORACLES = Path(__file__).resolve().parents[1] / "fixtures" / "oracles"
SMALL = str(ORACLES / "small.csv.gz")


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "method", ["normal", "cluster", "bootstrap", "bca", "cluster-bootstrap", "cluster-wild"]
)
# the 20-cluster oracle draws the few-clusters cautions; the subject is the JSON
@pytest.mark.filterwarnings("ignore:.* clusters, the largest:rankci.RankciWarning")
@pytest.mark.filterwarnings("ignore:the cluster bootstrap with only:rankci.RankciWarning")
def test_scores_json_schema_and_values(capsys, method):
    payload = _json(
        capsys,
        ["scores", SMALL, "--method", method, "--seed", "3", "--reps", "300", "--format", "json"],
    )
    assert payload["method"] == method and payload["alpha"] == 0.05
    for row in payload["models"]:
        assert {"model", "score", "lower", "upper", "se"} <= set(row)
        assert row["lower"] <= row["score"] <= row["upper"]
    assert payload["indistinguishable"]["form"] == "runs"  # docs/json.md
    assert len(payload["indistinguishable"]["below"]) == len(payload["models"])
    expected = score_intervals(rankci.read_scores(SMALL), method, reps=300, rng=3)
    assert payload["models"] == expected.to_dict()["models"]
    assert payload["paired"]["multiplicity"] == "holm"


# the 20-cluster oracle draws the few-clusters caution; the subject is the flag and its fields
@pytest.mark.filterwarnings("ignore:.* clusters, the largest:rankci.RankciWarning")
def test_scores_method_cluster_wild_flag_and_json_fields(capsys):
    """`--method cluster-wild` (20 clusters: 2^20 > --reps, so --reps random sign vectors from
    --seed) gives the library's answer and records weights, draws, enumeration and seed."""
    argv = ["scores", SMALL, "--method", "cluster-wild", "--seed", "5", "--reps", "400"]
    payload = _json(capsys, [*argv, "--format", "json"])
    options = payload["options"]
    assert payload["method"] == "cluster-wild"
    assert options["wild_weights"] == "rademacher" and options["seed"] == 5
    assert options["draws"] == 400 and options["enumerated"] is False
    assert options["n_clusters"] == 20 and options["studentization"] == "CR1"
    expected = score_intervals(rankci.read_scores(SMALL), "cluster-wild", reps=400, rng=5)
    assert payload["models"] == expected.to_dict()["models"]
    assert payload["paired"]["test"] == "clustered-t"
    by_cluster = _json(capsys, [*argv, "--by-cluster", "--format", "json"])
    assert by_cluster["within_cluster_method"] == "normal" and len(by_cluster["clusters"]) == 20
    webb = _json(capsys, [*argv, "--wild-weights", "webb", "--format", "json"])
    assert webb["options"]["wild_weights"] == "webb" and webb["models"] != payload["models"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert (
        "wild cluster bootstrap-t interval (rademacher weights, 400 random weight vectors, "
        "seed 5), 20 clusters, 95% intervals" in out
    )
    assert main(["scores", SMALL, "--wild-weights", "webb"]) == 2
    assert (
        "--wild-weights webb is an option of --method cluster-wild only" in capsys.readouterr().err
    )


def test_scores_by_cluster_and_small_sample(capsys):
    payload = _json(
        capsys,
        [
            "scores",
            SMALL,
            "--method",
            "cluster",
            "--small-sample",
            "--by-cluster",
            "--alpha",
            "0.1",
            "--format",
            "json",
        ],
    )
    assert payload["options"]["small_sample"] == "cadjust" and payload["alpha"] == 0.1
    assert payload["within_cluster_method"] == "normal"
    assert len(payload["clusters"]) == 20
    assert payload["clusters"][0]["cluster"] == "c001"


def test_scores_table_shows_both_verdicts(capsys):
    assert main(["scores", SMALL, "--method", "normal"]) == 0
    out = capsys.readouterr().out
    overlap = (
        "overlapping intervals ('statistically indistinguishable'; per pair, not simultaneous)"
    )
    assert overlap in out
    # 0/1 scores: the default test's exact McNemar (sign) test (issue 25, item 3)
    assert "paired verdict (exact McNemar (sign) + Holm, simultaneous)" in out
    assert "m05 > m01" in out
    assert out.splitlines()[2].split()[:6] == ["model", "score", "se", "lower", "upper", "n"]


def test_scores_csv_and_output_file(tmp_path):
    target = tmp_path / "out.csv"
    assert (
        main(
            [
                "scores",
                SMALL,
                "--method",
                "normal",
                "--by-cluster",
                "--format",
                "csv",
                "-o",
                str(target),
            ]
        )
        == 0
    )
    lines = target.read_text().splitlines()
    assert lines[0] == "cluster,model,score,se,lower,upper,n"
    assert len(lines) == 1 + 5 + 20 * 5


def test_scores_errors_exit_2(capsys):
    assert main(["scores", SMALL, "--reps", "1"]) == 2
    assert "reps must be an integer >= 2" in capsys.readouterr().err
    assert main(["scores", str(ORACLES / "nope.csv"), "--method", "normal"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_scores_cluster_method_without_clusters_is_an_error(tmp_path, capsys):
    path = tmp_path / "wide.csv"
    path.write_text("item,a,b\nq1,1,0\nq2,0,0\nq3,1,1\n")
    assert main(["scores", str(path), "--method", "cluster"]) == 2
    assert "cluster column" in capsys.readouterr().err


def test_plan_json_target_width_and_pair(capsys):
    payload = _json(
        capsys,
        [
            "plan",
            str(ORACLES / "medium.csv.gz"),
            "--target-width",
            "0.03",
            "--pair",
            "m12",
            "m10",
            "--items",
            "500",
            "2000",
            "--format",
            "json",
        ],
    )
    assert payload["n_pilot"] == 2000
    assert payload["target_width"]["all_models"] == max(payload["target_width"]["items"].values())
    pair = payload["pair"]
    assert pair["first"] == "m12" and pair["items_needed"] == 1262
    assert [row["n"] for row in pair["probability"]] == [500, 2000]
    assert [row["n"] for row in payload["resolution"]] == [500, 2000]


def test_plan_table_and_errors(capsys):
    assert main(["plan", SMALL, "--covariance", "cluster", "--pair", "m05", "m01"]) == 0
    out = capsys.readouterr().out
    assert "clustered like the pilot's" in out and "m05 vs m01" in out
    assert main(["plan", SMALL, "--pair", "m05", "zzz"]) == 2
    assert "unknown model 'zzz'" in capsys.readouterr().err


def test_scores_cr2_flag_and_flags_before_data(capsys):
    payload = _json(capsys, ["scores", "--method", "cluster", "--cr2", SMALL, "--format", "json"])
    assert payload["options"]["small_sample"] == "cr2"
    assert payload["paired"]["test"] == "clustered-t"
    payload = _json(
        capsys, ["scores", "--small-sample", SMALL, "--method", "cluster", "--format", "json"]
    )
    assert payload["options"]["small_sample"] == "cadjust"
