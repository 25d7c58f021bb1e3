"""What an output's statements are about (its target), in one sentence and one JSON word.

The fixed-sample flow (``rank``, ``scores``, ``check``, ...) speaks about new items like these
(with item units; new clusters with cluster units); the anytime-valid monitor, by default
(sampling ``finite``), about these items: each model's mean over exactly the benchmark's items.
On one board the two questions can certify very different amounts, so every output says which
it answers. No imports: the command line and the report both read it.
"""

from __future__ import annotations

__all__ = ["TARGETS", "target", "target_sentence"]


#: what the statements of an output are about: by the unit of analysis of the fixed-sample flow,
#: or by the sampling model of the anytime-valid monitor (finite: the N items at hand)
TARGETS = {
    "item": "new items like these",
    "cluster": "new clusters like these",
    "prompt": "new prompt variants like these",
    "observation": "these items",
    "finite": "these items",
    "iid": "new items like these",
    "mixed": "new clusters and items like these",
    "vote": "new votes like these",
    "benchmark": "new benchmarks like these",
}

_TARGET_WORDS = {
    "new items like these": "each model's expected score on items drawn as these were, not only "
    "its mean over these items",
    "new clusters like these": "each model's expected score on new clusters drawn as these "
    "were (each cluster weighing the same)",
    "new prompt variants like these": "each model's expected score on new prompt variants drawn "
    "as these were",
    "new clusters and items like these": "each model's expected score on new clusters, and new "
    "items within them, drawn as these were (the mixed model's random effects)",
    "new benchmarks like these": "the models' aggregate over new benchmarks drawn as these were, "
    "not only over these benchmarks",
    "new votes like these": "each model's Bradley-Terry strength in the process that produced "
    "these votes (new votes drawn as these were: the same prompts, voters and pairings)",
    "these items": "each model's mean over exactly these items, the benchmark as it is; nothing "
    "is said about new items",
}


def target(unit_or_sampling: str) -> str:
    """What an output's statements are about: ``"new items like these"``, ``"these items"``, ...
    (the ``"target"`` of its JSON).

    Examples
    --------
    >>> target("item"), target("finite"), target("cluster")
    ('new items like these', 'these items', 'new clusters like these')
    """
    return TARGETS.get(unit_or_sampling, TARGETS["item"])


def target_sentence(unit_or_sampling: str, flow: str = "fixed") -> str:
    """The one sentence of a text output that states its target, and, for the two flows'
    defaults, how the other flow's target differs (the monitor's default targets these items,
    ``rank`` new items like these: on one board they can certify very different amounts)."""
    name = target(unit_or_sampling)
    text = f"Target: {name}: every statement is about {_TARGET_WORDS[name]}"
    if flow == "fixed" and name == "new items like these":
        text += (
            " (rankci monitor, by default, targets these items, a narrower question on which it "
            "can certify more)"
        )
    elif flow == "anytime" and name == "these items":
        text += (
            " (rankci rank targets new items like these, a wider question on which it certifies "
            "less)"
        )
    return text + "."
