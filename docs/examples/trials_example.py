"""The repeated-trials example of docs/trials.md: four "agents" run 5 times on 60 tasks.

Each agent's success probability on task i is expit(ability + easiness_i) (seeded), and each
trial is a Bernoulli draw, so the trials of a task often disagree, as on τ-bench.

    python docs/examples/trials_example.py --out trials.csv
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

ABILITY = {"agent-a": 1.0, "agent-b": 0.7, "agent-c": 0.6, "agent-d": -0.2}


def table(n_tasks: int = 60, n_trials: int = 5, seed: int = 28) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    easiness = rng.normal(0.0, 1.5, size=n_tasks)
    rows = []
    for model, ability in ABILITY.items():
        p = 1 / (1 + np.exp(-(ability + easiness)))
        wins = rng.uniform(size=(n_tasks, n_trials)) < p[:, None]
        for i in range(n_tasks):
            for t in range(n_trials):
                rows.append((model, f"task-{i:02d}", t, int(wins[i, t])))
    return pd.DataFrame(rows, columns=["model", "item", "trial", "score"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="trials.csv")
    table().to_csv(parser.parse_args().out, index=False)
