"""Request and response bodies of the JSON API (they document it on the OpenAPI page)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt

from rankci.sequential import BETS, CERTIFIERS, RETIRE_RULES, SAMPLINGS

MAX_BATCH = 100_000

Sampling = Literal[SAMPLINGS]  # type: ignore[valid-type]
Bet = Literal[BETS]  # type: ignore[valid-type]
Certifier = Literal[CERTIFIERS]  # type: ignore[valid-type]
Retire = Literal[RETIRE_RULES]  # type: ignore[valid-type]
ItemId = str | StrictInt


class Item(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: ItemId = Field(description="The item's id (unique on the board).")
    cluster: str | None = Field(None, description="Its cluster (category, subject, task).")


class BoardCreate(BaseModel):
    """A new board: models, items and the monitor's settings, all fixed from now on."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "example": {
                "benchmark": "mmlu-pro",
                "run": "2026-w48",
                "models": ["model-a", "model-b", "model-c"],
                "items": [{"id": "q1", "cluster": "law"}, {"id": "q2", "cluster": "math"}],
                "retire": "topk",
                "k": 1,
            }
        },
    )
    benchmark: str = Field(description="The benchmark's name.")
    run: str = Field(description="The evaluation run (e.g. a date or a week).")
    id: str | None = Field(
        None,
        description="The board's id in URLs (letters, digits, '.', '_', '-'); "
        "default '<benchmark>--<run>'.",
    )
    title: str = Field("", description="Shown on the web page.")
    models: list[str] = Field(description="The models, fixed in advance (at least two).")
    items: list[ItemId | Item] = Field(
        description="Item ids, or objects {id, cluster}; the benchmark's N items."
    )
    clusters: list[str] | None = Field(None, description="One cluster per item (alternative).")
    order_seed: int | None = Field(
        None,
        ge=0,
        description="Seed of the shared random item order: the ids sorted as strings, permuted "
        "by numpy.random.default_rng(order_seed).permutation(N). Default: a fresh random seed.",
    )
    alpha: float = Field(0.05, gt=0, lt=1, description="Error level of every statement.")
    sampling: Sampling = Field(
        "finite",
        description="finite: the N items are the whole benchmark, evaluated in the shared random "
        "order; iid: items are i.i.d. draws.",
    )
    bet: Bet = Field("mixture", description="Betting strategy of the e-processes.")
    certifier: Certifier = Field("auto", description="auto = exact up to 8 models, else shortcut.")
    retire: Retire = Field("none", description="When a model's evaluation stops.")
    k: int | None = Field(None, ge=1, description="The top-k question (top-k rules, top-k status).")
    width: int = Field(0, ge=0, description="Target U - L of the 'width' rule.")
    look_every: int | str = Field(
        "1%", description="Items between looks: a count, or 'P%' of the items."
    )
    public: bool = Field(
        True, description="Public boards are readable by anyone; others need a token to read."
    )


class BoardCreated(BaseModel):
    board: dict = Field(description="The board's description (as GET /api/boards/{board}).")
    write_token: str = Field(description="Needed to post scores; shown only now (stored hashed).")
    read_token: str | None = Field(
        None, description="For a private board: lets others read without writing."
    )


class Score(BaseModel):
    """One score: model, item, and a number in [0, 1]."""

    model_config = ConfigDict(extra="forbid")
    model: str
    item: ItemId
    score: StrictFloat | StrictInt = Field(description="In [0, 1].")


class ScoreBatch(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "example": {
                "scores": [
                    {"model": "model-a", "item": "q1", "score": 1},
                    {"model": "model-b", "item": "q1", "score": 0.5},
                ]
            }
        },
    )
    scores: list[Score] = Field(max_length=MAX_BATCH)


class Posted(BaseModel):
    accepted: int = Field(description="New scores stored (committed before this reply).")
    duplicates: int = Field(description="Scores already stored with the same value (ignored).")
    progress: dict = Field(description="The board's progress after the post.")


class RetireRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str = Field(description="The model whose evaluation stops from now on.")


class Needed(BaseModel):
    t: int = Field(description="Items consumed by the monitor so far.")
    state: str
    active: list[str]
    next_look_at: int | None = Field(description="Item count of the next look.")
    evaluations: list[dict] = Field(
        description="Missing (model, item) scores, in the shared order: "
        "{model, item, position} with position the 0-based place in the order."
    )


class Leaderboard(BaseModel):
    """The leaderboard at the last look (see docs/service.md for every field)."""

    model_config = ConfigDict(extra="allow")
    board: str
    look: dict
    models: list[dict]
    certified_pairs: list[list[str]]
    tiers: list[list[str]]
    guarantee: str
    score_guarantee: str
    progress: dict


class History(BaseModel):
    models: list[str]
    looks: list[dict] = Field(
        description="One record per look: t, n_certified, evaluations, n_active, lower, upper "
        "(rank intervals in model order), retired, n_surviving_orders (exact certifier)."
    )
    events: list[dict]
