"""Real per-item leaderboard data bundled with rankci (see the PROVENANCE files beside them).

* MMLU-Pro (TIGER-AI-Lab, Apache-2.0): 32 models x 12,032 questions, 14 categories as clusters,
  0/1 correctness. ``mmlu_pro.PROVENANCE.md``.
* ChemBench (lamalab-org, MIT): 35 systems x 2,788 questions, 9 topics as clusters, 0/1
  correctness. ``chembench.PROVENANCE.md``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pandas as pd

from rankci.data import Scores

__all__ = ["load_mmlu_pro", "load_chembench", "path"]

_FILES = {"mmlu-pro": "mmlu_pro.parquet", "chembench": "chembench.parquet"}


def path(name: str) -> Path:
    """Filesystem path of a bundled dataset (``"mmlu-pro"`` or ``"chembench"``)."""
    if name not in _FILES:
        raise ValueError(f"unknown dataset {name!r}; choose one of {', '.join(map(repr, _FILES))}")
    return Path(str(resources.files(__name__).joinpath(_FILES[name])))


def load_mmlu_pro(as_frame: bool = False) -> Scores | pd.DataFrame:
    """MMLU-Pro per-question correctness: 32 models, 12,032 questions, 14 category clusters.

    Some models miss a few questions (DeepSeek-Coder-V2 answered 10,351), so
    ``missing="complete"`` analyses use the 10,300 or so questions every model answered.
    """
    frame = pd.read_parquet(path("mmlu-pro"))
    if as_frame:
        return frame
    return Scores.from_frame(frame, model="model", item="item", score="score", cluster="cluster")


def load_chembench(as_frame: bool = False) -> Scores | pd.DataFrame:
    """ChemBench per-question correctness: 35 systems, 2,788 questions, 9 topic clusters."""
    frame = pd.read_parquet(path("chembench"))
    if as_frame:
        return frame
    return Scores.from_frame(frame, model="model", item="item", score="score", cluster="cluster")
