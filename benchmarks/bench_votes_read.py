"""Reading time of a large vote table (issue 27): the door of the 2,000,000-vote target.

Issue 27's speed target is 2,000,000 votes over 200 models, with ties and a prompt cluster:
reading the Parquet, the fit, the sandwich and the rank intervals in <= 10 s. This script times
the reading part alone: a battles Parquet (``model_a``, ``model_b``, ``winner`` with 15 % ties and
5 % ``tie (bothbad)``, ``question_id`` over 50,000 prompts, ``judge`` over 20,000 voters), read by
:func:`rankci.votes.read_votes` into validated Votes (best of ``--repeats``, after one warm-up
read). The file is written with a fixed seed into a temporary folder.

Run:  python benchmarks/bench_votes_read.py            (2,000,000 votes, best of 3)
      python benchmarks/bench_votes_read.py --quick    (20,000 votes once; for CI)
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def write_battles(path: Path, n_votes: int, n_models: int, seed: int = 27) -> None:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    names = np.array([f"model-{k:03d}" for k in range(n_models)])
    a = rng.integers(0, n_models, n_votes)
    b = (a + rng.integers(1, n_models, n_votes)) % n_models  # never a model against itself
    winner = rng.choice(
        np.array(["model_a", "model_b", "tie", "tie (bothbad)"]), n_votes, p=[0.4, 0.4, 0.15, 0.05]
    )
    frame = pd.DataFrame(
        {
            "model_a": names[a],
            "model_b": names[b],
            "winner": winner,
            "question_id": rng.integers(0, 50_000, n_votes).astype(str),
            "judge": rng.integers(0, 20_000, n_votes).astype(str),
        }
    )
    frame.to_parquet(path, index=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20,000 votes, once")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from rankci.votes import read_votes

    n_votes, repeats = (20_000, 1) if args.quick else (2_000_000, args.repeats)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "battles.parquet"
        write_battles(path, n_votes, 200)
        read_votes(path)  # warm-up: imports, page cache
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            votes = read_votes(path)
            times.append(time.perf_counter() - start)
    print(
        f"read_votes: {votes.n_votes:,} votes, {votes.n_models} models, columns "
        f"{sorted(votes.columns)}: best {min(times):.2f} s of {repeats}"
    )


if __name__ == "__main__":
    main()
