"""A tiny offline evaluation for the CI example (docs/check.md): a toy "model" answers 400
arithmetic and 400 comparison questions, and every answer is scored 0/1.

The toy model is a checkpoint of a rule that errs on some questions; ``--checkpoint`` picks which
(``v1`` made docs/examples/baseline.csv; ``v2`` is the candidate of the example). It needs nothing
but the standard library, so the workflow runs it without network or GPU.

    python docs/examples/tiny_eval.py --checkpoint v2 --out new.csv
"""

from __future__ import annotations

import argparse
import csv
import random

ERROR_RATE = {"v1": {"arith": 0.20, "compare": 0.25}, "v2": {"arith": 0.18, "compare": 0.24}}


def questions(n: int = 400):
    rng = random.Random(2024)  # the question set is fixed: the same items in every run
    for i in range(n):
        a, b = rng.randint(0, 99), rng.randint(0, 99)
        yield "arith", f"arith-{i:03d}", (a, b), a + b
        yield "compare", f"compare-{i:03d}", (a, b), max(a, b)


def answer(checkpoint: str, task: str, item: str, pair: tuple[int, int], truth: int) -> int:
    """The toy model: right, except on a checkpoint-specific share of (hashed) questions; the
    checkpoints share their hard questions, as real checkpoints do (their scores are paired)."""
    draw = random.Random(item).random()
    hard = sum(pair) % 7 == 0  # some questions are hard for every checkpoint
    return truth if draw > ERROR_RATE[checkpoint][task] * (2.0 if hard else 0.85) else truth + 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default="v2", choices=sorted(ERROR_RATE))
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    with open(args.out, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["model", "task", "item", "score"])
        for task, item, pair, truth in questions():
            score = int(answer(args.checkpoint, task, item, pair, truth) == truth)
            writer.writerow([f"toy-{args.checkpoint}", task, item, score])


if __name__ == "__main__":
    main()
