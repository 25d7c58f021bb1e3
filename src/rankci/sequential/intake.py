"""Items in: what :class:`~rankci.sequential.Monitor` accepts, as score rows in model order.

An item is a mapping (or Series) model -> score, or M scores in model order; a block is a
(B, M) array, a DataFrame with one column per model, or a sequence of mappings. Retired models'
scores may be left out (NaN). Of a block, :func:`usable_rows` keeps the items with a finite score
for every active model (the others are excluded and counted) and refuses scores outside [0, 1].

Examples
--------
>>> import numpy as np
>>> index = {"a": 0, "b": 1}
>>> block_matrix([{"a": 1.0}, {"a": 0.0, "b": 0.5}], index).tolist()
[[1.0, nan], [0.0, 0.5]]
>>> kept, missing = usable_rows(np.array([[1.0, np.nan], [0.0, 0.5]]), np.array([True, True]),
...                             ("a", "b"), t=0)
>>> kept.tolist(), missing.tolist()
([[0.0, 0.5]], [0, 1])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from numbers import Real

import numpy as np

from rankci._base import is_dataframe

__all__ = ["block_matrix", "row_from_mapping", "usable_rows"]


def row_from_mapping(item: Mapping, index: Mapping[str, int]) -> np.ndarray:
    """M scores in model order from a mapping model -> score (absent or None: NaN).

    Raises ``ValueError`` for an unknown model or a score that is not a number.
    """
    row = np.full(len(index), np.nan)
    for name, value in item.items():
        j = index.get(str(name))
        if j is None:
            raise ValueError(f"unknown model {name!r}; the monitor's models are fixed")
        if isinstance(value, bool) or not isinstance(value, (Real, np.number)):
            if value is None:
                continue
            raise ValueError(f"score of model {name!r} is not a number: {value!r}")
        row[j] = float(value)
    return row


def block_matrix(block, index: Mapping[str, int]) -> np.ndarray:
    """A (B, M) float matrix in model order from an array, a DataFrame or a list of mappings."""
    m = len(index)
    if is_dataframe(block):
        unknown = [c for c in block.columns if str(c) not in index]
        if unknown:
            raise ValueError(f"unknown model column {unknown[0]!r}; columns must be models")
        x = np.full((len(block), m), np.nan)
        for c in block.columns:
            import pandas as pd  # a DataFrame came in: pandas is already imported

            x[:, index[str(c)]] = pd.to_numeric(block[c], errors="raise")
        return x
    if isinstance(block, Sequence) and block and isinstance(block[0], Mapping):
        return np.array([row_from_mapping(item, index) for item in block])
    x = np.asarray(block, dtype=float)
    if x.ndim != 2 or x.shape[1] != m:
        raise ValueError(f"a block needs items x {m} models scores, got shape {x.shape}")
    return x


def usable_rows(
    x: np.ndarray, active: np.ndarray, models: Sequence[str], t: int
) -> tuple[np.ndarray, np.ndarray]:
    """The rows of ``x`` with a finite score for every active model, and the count of missing
    scores of each active model among the rows dropped (in the order of ``active``'s True
    entries). ``t`` (items consumed before the block) only serves the error message.

    Raises ``ValueError``, naming the model and the item, for a score outside [0, 1].
    """
    xa = x[:, active]
    missing = np.isnan(xa)
    counts = np.zeros(xa.shape[1], dtype=np.int64)
    if missing.any():
        bad = missing.any(axis=1)
        counts = missing.sum(axis=0)
        x, xa = x[~bad], xa[~bad]
    outside = (xa < 0.0) | (xa > 1.0)
    if outside.any():
        row, col = np.argwhere(outside)[0]
        model = models[np.flatnonzero(active)[col]]
        raise ValueError(
            f"score of model {model!r} is {xa[row, col]:g} on the item consumed after "
            f"{t + int(row)} items; scores must lie in [0, 1] (rescale them first)"
        )
    return x, counts
