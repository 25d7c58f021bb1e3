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
    """Filesystem path of a bundled dataset (``"mmlu-pro"`` or ``"chembench"``).

    Parameters
    ----------
    name : str
        ``"mmlu-pro"`` or ``"chembench"``.

    Returns
    -------
    pathlib.Path
        The dataset's parquet file inside the installed package.

    References
    ----------
    Wang, Y., Ma, X., Zhang, G., et al. (2024). MMLU-Pro: A more robust and challenging
    multi-task language understanding benchmark. NeurIPS 2024 Datasets and Benchmarks Track
    (arXiv:2406.01574). Per-question results: ``TIGER-AI-Lab/MMLU-Pro`` on GitHub
    (``mmlu_pro.PROVENANCE.md``).
    Mirza, A., et al. (2024). Are large language models superhuman chemists? arXiv:2404.01475
    (the ChemBench paper). Per-question results: ``lamalab-org/chembench-paper`` on GitHub
    (``chembench.PROVENANCE.md``).

    Examples
    --------
    >>> path("mmlu-pro").name, path("chembench").name
    ('mmlu_pro.parquet', 'chembench.parquet')
    >>> path("mmlu").name
    Traceback (most recent call last):
    ...
    ValueError: unknown dataset 'mmlu'; choose one of 'mmlu-pro', 'chembench'
    """
    if name not in _FILES:
        raise ValueError(f"unknown dataset {name!r}; choose one of {', '.join(map(repr, _FILES))}")
    return Path(str(resources.files(__name__).joinpath(_FILES[name])))


def load_mmlu_pro(as_frame: bool = False) -> Scores | pd.DataFrame:
    """MMLU-Pro per-question correctness: 32 models, 12,032 questions, 14 category clusters.

    Some models miss a few questions (DeepSeek-Coder-V2 answered 10,351), so
    ``missing="complete"`` analyses use the 10,300 or so questions every model answered.

    Parameters
    ----------
    as_frame : bool, default False
        Return the long table (``model``, ``item``, ``cluster``, ``source``, ``score``, ...)
        instead of Scores.

    Returns
    -------
    Scores or pandas.DataFrame

    References
    ----------
    Wang, Y., Ma, X., Zhang, G., et al. (2024). MMLU-Pro: A more robust and challenging
    multi-task language understanding benchmark. NeurIPS 2024 Datasets and Benchmarks Track
    (arXiv:2406.01574). Per-question results: ``TIGER-AI-Lab/MMLU-Pro`` on GitHub
    (``mmlu_pro.PROVENANCE.md``).

    Examples
    --------
    >>> scores = load_mmlu_pro()
    >>> scores.n_models, scores.n_items, len(scores.clusters)
    (32, 12032, 14)
    >>> frame = load_mmlu_pro(as_frame=True)
    >>> frame["model"].nunique(), frame["item"].nunique(), frame["cluster"].nunique()
    (32, 12032, 14)
    """
    frame = pd.read_parquet(path("mmlu-pro"))
    if as_frame:
        return frame
    return Scores.from_frame(frame, model="model", item="item", score="score", cluster="cluster")


def load_chembench(as_frame: bool = False) -> Scores | pd.DataFrame:
    """ChemBench per-question correctness: 35 systems, 2,788 questions, 9 topic clusters.

    Parameters
    ----------
    as_frame : bool, default False
        Return the long table (``model``, ``base_model``, ``setting``, ``item``, ``cluster``,
        ``score``, ...) instead of Scores.

    Returns
    -------
    Scores or pandas.DataFrame

    References
    ----------
    Mirza, A., et al. (2024). Are large language models superhuman chemists? arXiv:2404.01475
    (the ChemBench paper). Per-question results: ``lamalab-org/chembench-paper`` on GitHub
    (``chembench.PROVENANCE.md``).

    Examples
    --------
    >>> scores = load_chembench()
    >>> scores.n_models, scores.n_items, len(scores.clusters)
    (35, 2788, 9)
    >>> frame = load_chembench(as_frame=True)
    >>> frame["model"].nunique(), frame["item"].nunique(), frame["cluster"].nunique()
    (35, 2788, 9)
    """
    frame = pd.read_parquet(path("chembench"))
    if as_frame:
        return frame
    return Scores.from_frame(frame, model="model", item="item", score="score", cluster="cluster")
