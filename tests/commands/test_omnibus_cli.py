"""``rankci omnibus`` with many models (issue 18): pair tables are summarised in the text (what
is separated, and a count of the rest), printed in full with --full-table, and always complete in
the JSON."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from rankci.cli import main
from rankci.commands.omnibus import FULL_TABLE_PAIRS, SUMMARY_ROWS


def _board(tmp_path, n_models: int, n_items: int = 120, seed: int = 5):
    rng = np.random.default_rng(seed)
    ability = np.linspace(-1.5, 1.5, n_models)
    easiness = rng.normal(0, 1, n_items)
    p = 1 / (1 + np.exp(-(ability[None, :] + easiness[:, None])))
    y = (rng.random((n_items, n_models)) < p).astype(float)
    frame = pd.DataFrame(
        {
            "model": np.tile([f"m{j:02d}" for j in range(n_models)], n_items),
            "item": np.repeat([f"i{i:03d}" for i in range(n_items)], n_models),
            "cluster": np.repeat([f"c{i % 4}" for i in range(n_items)], n_models),
            "score": y.ravel(),
        }
    )
    path = tmp_path / f"board{n_models}.csv"
    frame.to_csv(path, index=False)
    return path


def _run(capsys, *argv) -> str:
    assert main(["omnibus", *map(str, argv)]) == 0
    return capsys.readouterr().out


def _pair_rows(section: str) -> list[str]:
    """Data rows of the pair table at the start of ``section`` (lines 'mXX  mYY ...')."""
    rows = []
    for line in section.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0].startswith("m") and words[1].startswith("m"):
            rows.append(line)
    return rows


@pytest.mark.parametrize(
    ("method", "key", "p_column"),
    [("anova", "posthoc", "p_adjusted"), ("friedman", "posthoc", "p_adjusted")],
)
def test_posthoc_summary_full_table_and_json(tmp_path, capsys, method, key, p_column):
    path = _board(tmp_path, 12)  # 66 pairs > FULL_TABLE_PAIRS
    payload = json.loads(_run(capsys, path, "--method", method, "--posthoc", "--format", "json"))
    pairs = payload[key]["pairs"]
    assert len(pairs) == 66 > FULL_TABLE_PAIRS
    separated = sorted((p[p_column], p["first"], p["second"]) for p in pairs if p[p_column] <= 0.05)
    assert 0 < len(separated) < 66

    text = _run(capsys, path, "--method", method, "--posthoc")
    section = text[text.index("(alpha = 0.05)") :]
    assert f"66 pairs: {len(separated)} separated (p_adjusted <= 0.05), " in section
    rows = _pair_rows(section)
    assert len(rows) == min(len(separated), SUMMARY_ROWS)
    listed = [tuple(r.split()[:2]) for r in rows]
    assert listed == [(a, b) for _, a, b in separated[: len(rows)]]  # smallest p first
    if len(separated) > SUMMARY_ROWS:
        assert f"... and {len(separated) - SUMMARY_ROWS} more separated pairs." in section
    assert "--full-table prints all 66 pairs" in section

    full = _run(capsys, path, "--method", method, "--posthoc", "--full-table")
    rows = _pair_rows(full[full.index("(alpha = 0.05)") :])
    assert [tuple(r.split()[:2]) for r in rows] == [(p["first"], p["second"]) for p in pairs]


def test_mixed_contrasts_are_summarised(tmp_path, capsys):
    path = _board(tmp_path, 12)
    payload = json.loads(_run(capsys, path, "--method", "mixed", "--format", "json"))
    contrasts = payload["contrasts"]
    n_sep = sum(c["p_holm"] <= 0.05 for c in contrasts)
    assert len(contrasts) == 66 and 0 < n_sep < 66
    assert all(c["p_tukey"] is not None for c in contrasts)
    text = _run(capsys, path, "--method", "mixed")
    section = text[text.index("Pairwise contrasts") : text.index("Rank intervals")]
    assert f"66 pairs: {n_sep} separated (p_holm <= 0.05), {66 - n_sep} not." in section
    assert len(_pair_rows(section)) == min(n_sep, SUMMARY_ROWS)
    full = _run(capsys, path, "--method", "mixed", "--full-table")
    section = full[full.index("Pairwise contrasts") : full.index("Rank intervals")]
    assert len(_pair_rows(section)) == 66 and "66 pairs:" not in section


def test_few_pairs_print_the_whole_table(tmp_path, capsys):
    path = _board(tmp_path, 8)  # 28 pairs
    text = _run(capsys, path, "--method", "anova", "--posthoc")
    section = text[text.index("Tukey HSD") :]
    assert len(_pair_rows(section)) == 28 and "28 pairs:" not in section
