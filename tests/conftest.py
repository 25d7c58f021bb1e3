"""Shared fixtures: the R oracle datasets and their reference outputs (tests/fixtures/oracles)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import rankci

FIXTURES = Path(__file__).parent / "fixtures"
ORACLES = FIXTURES / "oracles"
ORACLE_DATASETS = ("small", "medium", "unbalanced")


def oracle_frame(name: str) -> pd.DataFrame:
    return pd.read_csv(ORACLES / f"{name}.csv.gz", dtype={"item": str})


def oracle_scores(name: str) -> rankci.Scores:
    return rankci.read_scores(oracle_frame(name))


def oracle_table(name: str, table: str) -> pd.DataFrame:
    return pd.read_csv(ORACLES / name / f"{table}.csv")


@pytest.fixture(scope="session", params=ORACLE_DATASETS)
def oracle(request):
    """(dataset name, Scores) for each oracle dataset."""
    return request.param, oracle_scores(request.param)


@pytest.fixture(scope="session")
def mmlu():
    return rankci.datasets.load_mmlu_pro()
