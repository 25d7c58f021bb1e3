"""``bench_outofcore.py --billion DIR``, tiny: it runs end to end, and the rankings of the
out-of-core CLI, of the Dask local cluster and of the in-memory path agree. No timing asserted."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from limits import HANG_GUARD, run_script  # tests/limits.py: a hang guard, not a time limit

import rankci

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_outofcore.py"
SIZES = ["--models", "30", "--items", "400", "--items-per-file", "90"]


def _run(directory):
    return run_script(BENCH, "--billion", directory, *SIZES)


def test_billion_quick_runs_and_the_three_paths_agree(tmp_path):
    directory = tmp_path / "parts"
    out = _run(directory)
    assert "dataset: written in" in out
    assert "30 models x 400 items = 12,000 scores" in out and "5 files of 90 items" in out
    rows = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("| ")]
    names = [r[0].strip() for r in rows[1:]]
    assert names[:3] == [
        "read (pyarrow, file by file)",
        "rankci rank DIR --test t",
        "rankci rank DIR --test t --dask local",
    ]
    assert names[3].startswith("floor of the centred Gram alone") and len(names) == 4
    for row in rows[1:]:
        wall, ratio, rss, before, after = (float(c) if c.strip() else None for c in row[1:])
        assert wall > 0 and ratio > 0 and before >= 0 and after >= 0, row
        assert rss is None if row is rows[4] else rss > 0, row  # the floor has no process RSS
    assert re.search(r"^same answer: 30 models, every column but the score equal", out, re.M)

    # the dataset is what the docstring says: 0/1 uint8 scores, every cell once, sorted by item
    marker = json.loads((directory / "_rankci_billion.json").read_text())
    assert marker == {"models": 30, "items": 400, "items_per_file": 90, "seed": 0,
                      "scores": "uint8"}  # fmt: skip
    frame = pd.read_parquet(directory)
    assert frame["score"].dtype == np.uint8 and set(frame["score"].unique()) <= {0, 1}
    assert len(frame) == 12_000 and not frame.duplicated(["model", "item"]).any()

    # the in-memory path on the same table, through the same command (one Parquet file)
    whole = tmp_path / "whole.parquet"
    frame.astype({"model": str, "item": str}).to_parquet(whole, index=False)
    memory = subprocess.run(
        [sys.executable, "-m", "rankci", "rank", str(whole), "--test", "t", "--seed", "0",
         "--format", "csv"],
        capture_output=True, text=True, timeout=HANG_GUARD, check=True,
    ).stdout  # fmt: skip
    cli = (directory / "_rank-cli.csv").read_text()
    assert cli == memory  # the files hold the items in sorted order: the same bits
    want = rankci.rank(frame.astype({"model": str, "item": str}), test="t", rng=0).to_frame()
    dask = pd.read_csv(directory / "_rank-dask.csv")
    columns = ["model", "rank", "rank_lower", "rank_upper", "tier"]
    assert dask[columns].equals(want[columns].reset_index(drop=True).astype(dask[columns].dtypes))
    np.testing.assert_allclose(dask["score"], want["score"], rtol=1e-12)
    assert ((dask["rank_lower"] > 1) | (dask["rank_upper"] < 30)).any()  # something certified

    # a second run reuses the dataset (--write-only: it stops there, the timed runs are above)
    files = {f.name: f.stat().st_mtime_ns for f in directory.glob("*.parquet")}
    again = run_script(BENCH, "--billion", directory, *SIZES, "--write-only")
    assert "dataset: reused" in again and "dataset: written" not in again
    assert {f.name: f.stat().st_mtime_ns for f in directory.glob("*.parquet")} == files
