"""Request and response bodies of the JSON API (they document it on the OpenAPI page).

:class:`BoardCreate`'s monitor settings are built from the fields of
:class:`rankci.sequential.spec.MonitorSpec` (:data:`BOARD_SETTINGS`: every setting but
``n_items``, which is the number of items): their defaults, help texts and choices, and their
values are checked by the spec itself. A setting added to the spec is a field here too.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from rankci.sequential.spec import REPLAY_DEFAULTS, MonitorSpec

MAX_BATCH = 100_000

ItemId = str | StrictInt
#: The monitor settings a board takes (``n_items`` is the board's number of items).
BOARD_SETTINGS = tuple(f.name for f in dataclasses.fields(MonitorSpec) if f.name != "n_items")


class Item(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: ItemId = Field(description="The item's id (unique on the board).")
    cluster: str | None = Field(None, description="Its cluster (category, subject, task).")


class BoardFields(BaseModel):
    """A new board's own fields (its monitor settings are added by :data:`BoardCreate`)."""

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
    kind: Literal["scores", "votes"] = Field(
        "scores",
        description="What the board holds: scores (model, item, score) or pairwise votes "
        "(model_a, model_b, winner; the anytime-valid arena, docs/arena-monitor.md). A votes "
        "board has no items and allows sampling='iid', bet mixture/agrapa/fixed, certifier "
        "auto/bonferroni, retire='none', look_every a vote count (default 100).",
    )
    items: list[ItemId | Item] | None = Field(
        None,
        description="Item ids, or objects {id, cluster}; the benchmark's N items (a scores "
        "board needs them; a votes board has none).",
    )
    clusters: list[str] | None = Field(None, description="One cluster per item (alternative).")
    order_seed: int | None = Field(
        None,
        ge=0,
        description="Seed of the shared random item order: the ids sorted as strings, permuted "
        "by numpy.random.default_rng(order_seed).permutation(N). Default: a fresh random seed.",
    )
    public: bool = Field(
        True, description="Public boards are readable by anyone; others need a token to read."
    )
    item_entry: Literal["closed", "open"] = Field(
        "closed",
        description="'open': a score for an item not on the board appends that item to the "
        "shared order, in the order scores are committed (sampling 'iid', no clusters; fixed "
        "at creation). 'closed': the items given are the board's.",
    )

    @model_validator(mode="after")
    def _settings_are_valid(self) -> BoardFields:
        if self.kind == "votes":
            if self.items is not None or self.clusters is not None:
                raise ValueError("a votes board has no items or clusters: leave them out")
            if self.item_entry != "closed":
                raise ValueError("a votes board has no items: item_entry 'open' is for scores")
            return self  # checked by rankci.service.spec.make_vote_spec (with its defaults)
        if self.items is None:
            raise ValueError("items are required for a scores board")
        # the spec's own checks (the value itself is left out of the message: never echoed)
        try:
            MonitorSpec(**{name: getattr(self, name) for name in BOARD_SETTINGS})
        except (TypeError, ValueError) as error:
            raise ValueError(str(error).split(", got ")[0]) from None
        return self


def _field(setting: dataclasses.Field) -> tuple[Any, Any]:
    """The pydantic field of a MonitorSpec setting: its type (its choices), default and help."""
    choices = setting.metadata.get("choices")
    kind = Literal[choices] if choices else _HINTS[setting.name]  # type: ignore[valid-type]
    default = REPLAY_DEFAULTS.get(setting.name, setting.default)
    return kind, Field(default, description=setting.metadata["help"])


_HINTS = typing.get_type_hints(MonitorSpec)
_HINTS["grid"] = tuple[float, ...]


def _check_setting(value: Any, info: ValidationInfo) -> Any:
    """A setting checked on its own by the spec, so that an error is reported at its field (the
    value itself is left out of the message: never echoed)."""
    try:
        return MonitorSpec.check_setting(info.field_name, value)
    except (TypeError, ValueError) as error:
        raise ValueError(str(error).split(", got ")[0]) from None


#: A new board: models, items and the monitor's settings, all fixed from now on.
BoardCreate = create_model(
    "BoardCreate",
    __base__=BoardFields,
    __module__=__name__,
    __doc__="A new board: models, items and the monitor's settings, all fixed from now on.",
    __validators__={"_each_setting": field_validator(*BOARD_SETTINGS)(_check_setting)},
    **{f.name: _field(f) for f in dataclasses.fields(MonitorSpec) if f.name in BOARD_SETTINGS},
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


class Vote(BaseModel):
    """One pairwise vote: the two models and the outcome (``winner``)."""

    model_config = ConfigDict(extra="forbid")
    model_a: str
    model_b: str
    winner: Literal["model_a", "model_b", "tie", "tie (bothbad)"]
    key: str | None = Field(
        None,
        description="Idempotency key: a vote posted again with its key is acknowledged as a "
        "duplicate and not applied twice; the key with a different vote is refused (409).",
    )
    prompt: str | StrictInt | None = Field(
        None, description="The prompt or question id (stored, not used by the monitor)."
    )
    voter: str | None = Field(None, description="The voter or judge (stored, not used).")
    timestamp: StrictFloat | StrictInt | str | None = Field(
        None,
        description="ISO 8601 (stored as given) or Unix seconds (stored as ISO 8601 UTC); not "
        "used: the order of a board's votes is their commit order.",
    )


class VoteBatch(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "example": {
                "votes": [
                    {"model_a": "model-a", "model_b": "model-b", "winner": "model_a"},
                    {"model_a": "model-b", "model_b": "model-c", "winner": "tie"},
                ]
            }
        },
    )
    votes: list[Vote] = Field(max_length=MAX_BATCH)


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
    entries: list[dict] = Field(
        default=[],
        description="Per model: the item count t, look count and UTC time at which it joined, "
        "and its number of scores.",
    )
    first_certified: list[dict] = Field(
        default=[],
        description="Each certified pair (winner, loser) with the look (number and t) that "
        "first certified it.",
    )
    rank_bounds_since: list[dict] = Field(
        default=[],
        description="Per model: its rank bounds at the last look and the look since which "
        "each has held.",
    )
