"""Claims as checks: parse a claim about models, decide it with a joint guarantee.

The grammar (docs/check.md)::

    claim   := name (">" | ">=") name [("+" | "-") number]      A beats B (by more than c)
             | name ("<" | "<=") name [("+" | "-") number]      the same, read from the right
             | name "~" name "within" number                    equivalence, |A - B| < e
             | name ["is"] "in" "top" integer                   true rank <= k
             | name "is" "best"                                 true rank 1, alone
    name    := a bare word (no blank, quote or any of < > = ~), or quoted with ' or " ('\\' escapes)

Every claim is decided by one-sided paired tests of directional hypotheses
``H(j, l, c): theta_j - theta_l <= c`` (rejecting certifies ``theta_j - theta_l > c``):

=====================  =================================  ==================================
claim                  supported when rejected            contradicted when rejected
=====================  =================================  ==================================
A > B + c              H(A, B, c)                         H(B, A, -c)
A ~ B within e         H(A, B, -e) and H(B, A, -e)        H(A, B, e) or H(B, A, e)
A in top k             U_A <= k in the simultaneous       L_A > k
                       ranking of H(j, l, 0), all pairs
=====================  =================================  ==================================

All hypotheses of one call, with the M(M - 1) ranking pairs when a claim is a rank statement,
form ONE family tested by Holm's step-down at level alpha. Holm controls the family-wise error
under any dependence, so with probability >= 1 - alpha no true hypothesis is rejected; then every
certified statement is true, so is its transitive closure, and every supported claim is true and
every contradicted claim false, all at once (docs/check.md gives the argument).

References
----------
Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scandinavian Journal of
Statistics 6(2), 65-70.
Schuirmann, D. J. (1987). A comparison of the two one-sided tests procedure and the power approach
for assessing the equivalence of average bioavailability. J. Pharmacokinet. Biopharm. 15, 657-680.
Berger, R. L. (1982). Multiparameter hypothesis testing and acceptance sampling. Technometrics
24(4), 295-300 (intersection-union tests).
Al Mohamad, D., Goeman, J. J. and van Zwet, E. W. (2022). Simultaneous confidence intervals for
ranks with application to ranking institutions. Biometrics 78(1), 238-247.
"""

from __future__ import annotations

import dataclasses
import difflib
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import special

from rankci._base import check_choice, format_pvalue, jsonable
from rankci.certify.holm import adjust_pvalues, explain_pvalues, plain_pvalues, reject
from rankci.data import Scores, UnitScores
from rankci.evidence.pairwise import (
    SIGNED_MARGIN_TESTS,
    Pairwise,
    pairwise_tests,
    signed_margin_tests,
)
from rankci.io import as_scores
from rankci.leaderboard import apply_trials, resolve_spec
from rankci.method import UNIT_SCOPE, MethodSpec
from rankci.ranking import Ranking, ranking_from_dominance

__all__ = [
    "RESULTS",
    "Claim",
    "ClaimGroup",
    "ClaimResult",
    "ClaimCheck",
    "parse_claim",
    "check_claims",
    "decide_claims",
    "with_trials",
]

#: the three outcomes of a claim
RESULTS = ("supported", "contradicted", "not decided")

_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_BARE = re.compile(r"[^\s'\"<>=~]+")
_OPERATORS = (">=", "<=", ">", "<", "~")


# ---------------------------------------------------------------------- grammar
@dataclass(frozen=True)
class Claim:
    """One parsed claim.

    ``kind`` is ``"better"`` (``theta_first - theta_second > margin``), ``"equivalent"``
    (``|theta_first - theta_second| < margin``) or ``"top"`` (true rank of ``first`` <= ``k``).
    ``positions`` holds the character offsets of the model names in ``text`` (for messages).
    """

    text: str
    kind: str
    first: str
    second: str | None = None
    margin: float = 0.0
    k: int | None = None
    positions: tuple[int, ...] = ()

    def statement(self) -> str:
        """What a "supported" result certifies, in words."""
        if self.kind == "better":
            if self.margin == 0:
                return f"{self.first} is better than {self.second}"
            if self.margin > 0:
                return f"{self.first} is better than {self.second} by more than {self.margin:g}"
            return f"{self.first} is not worse than {self.second} by {-self.margin:g} or more"
        if self.kind == "equivalent":
            return f"{self.first} and {self.second} differ by less than {self.margin:g}"
        if self.k == 1:
            return f"{self.first} is the best model"
        return f"{self.first} is in the top {self.k}"


def _claim_error(text: str, position: int, what: str) -> ValueError:
    """``claim 'A >' at position 4: expected ...`` with the claim and a caret under the spot."""
    return ValueError(
        f"claim {text!r} at position {position + 1}: {what}\n    {text}\n    {' ' * position}^"
    )


def _tokens(text: str) -> list[tuple[str, str, int]]:
    """(kind, value, position) with kind "op", "name" (quoted), "word" (bare)."""
    out, i = [], 0
    while i < len(text):
        char = text[i]
        if char.isspace():
            i += 1
        elif char in "'\"":
            start, i, value = i, i + 1, []
            while i < len(text) and text[i] != char:
                if text[i] == "\\" and i + 1 < len(text):
                    i += 1
                value.append(text[i])
                i += 1
            if i >= len(text):
                raise _claim_error(text, start, f"the quote {char} is not closed")
            if not value:
                raise _claim_error(text, start, "an empty model name")
            out.append(("name", "".join(value), start))
            i += 1
        elif text.startswith(("<=", ">="), i):
            out.append(("op", text[i : i + 2], i))
            i += 2
        elif char in "<>~":
            out.append(("op", char, i))
            i += 1
        elif char == "=":
            raise _claim_error(text, i, "'=' alone is no comparison; use >, >=, <, <= or ~")
        else:
            match = _BARE.match(text, i)
            out.append(("word", match.group(), i))
            i = match.end()
    return out


def parse_claim(text: str) -> Claim:
    """Parse one claim of the grammar in the module docstring.

    Raises
    ------
    ValueError
        Naming the claim and the position (1-based character) where it stops making sense.

    Examples
    --------
    >>> parse_claim("'gpt-4o [dir]' >= llama - 0.01")
    Claim(text="'gpt-4o [dir]' >= llama - 0.01", kind='better', first='gpt-4o [dir]', \
second='llama', margin=-0.01, k=None, positions=(0, 18))
    >>> parse_claim("a in top 3").k
    3
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"a claim must be a non-empty text, got {text!r}")
    tokens = _tokens(text)
    end = len(text.rstrip())

    def take(index: int, what: str) -> tuple[str, str, int]:
        if index >= len(tokens):
            raise _claim_error(text, end, f"the claim ends where {what} was expected")
        return tokens[index]

    def name(index: int) -> tuple[str, int]:
        kind, value, pos = take(index, "a model name")
        if kind == "op":
            raise _claim_error(text, pos, f"expected a model name, found {value!r}")
        return value, pos

    def number(index: int, what: str) -> float:
        kind, value, pos = take(index, what)
        if kind != "word" or not _NUMBER.match(value):
            raise _claim_error(text, pos, f"expected {what}, found {value!r}")
        return float(value)

    def finish(index: int) -> None:
        if index < len(tokens):
            raise _claim_error(text, tokens[index][2], f"unexpected {tokens[index][1]!r} here")

    first, first_pos = name(0)
    kind, value, pos = take(1, "a comparison (>, >=, <, <=, ~), 'in top K' or 'is best'")
    if kind == "op" and value in (">", ">=", "<", "<="):
        second, second_pos = name(2)
        offset, index = 0.0, 3
        if index < len(tokens):
            sign_kind, sign, sign_pos = tokens[index]
            if sign_kind == "word" and sign in ("+", "-"):
                offset = number(index + 1, f"a number after {sign!r}")
                offset, index = (offset if sign == "+" else -offset), index + 2
            elif sign_kind == "word" and _NUMBER.match(sign) and sign[0] in "+-":
                offset, index = float(sign), index + 1
            else:
                raise _claim_error(
                    text,
                    sign_pos,
                    f"expected '+ NUMBER' or '- NUMBER', found "
                    f"{sign!r} (quote a model name with blanks or symbols)",
                )
        finish(index)
        if value in (">", ">="):
            return Claim(text, "better", first, second, offset, None, (first_pos, second_pos))
        return Claim(text, "better", second, first, -offset, None, (second_pos, first_pos))
    if kind == "op" and value == "~":
        second, second_pos = name(2)
        word = take(3, "'within'")
        if word[0] != "word" or word[1] != "within":
            raise _claim_error(text, word[2], f"expected 'within MARGIN', found {word[1]!r}")
        margin = number(4, "the equivalence margin (a positive number)")
        if not margin > 0:
            raise _claim_error(text, tokens[4][2], "the equivalence margin must be positive")
        finish(5)
        return Claim(text, "equivalent", first, second, margin, None, (first_pos, second_pos))
    words = [t[1] if t[0] == "word" else None for t in tokens[1:4]]
    if words[:2] == ["is", "best"]:
        finish(3)
        return Claim(text, "top", first, None, 0.0, 1, (first_pos,))
    start = 2 if words[0] == "is" and words[1] == "in" else 1
    if [t[1] if t[0] == "word" else None for t in tokens[start : start + 2]] == ["in", "top"]:
        kind_k, value_k, pos_k = take(start + 2, "the K of 'in top K'")
        if kind_k != "word" or not value_k.isdigit() or int(value_k) < 1:
            raise _claim_error(
                text, pos_k, f"expected a positive whole number K, found {value_k!r}"
            )
        finish(start + 3)
        return Claim(text, "top", first, None, 0.0, int(value_k), (first_pos,))
    raise _claim_error(
        text,
        pos,
        f"expected >, >=, <, <=, ~, 'in top K' or 'is best' after the model name, found "
        f"{value!r} (quote a model name with blanks or symbols: 'my model' > other)",
    )


# ---------------------------------------------------------------------- results
@dataclass(frozen=True, repr=False)
class ClaimResult:
    """The decision on one claim: ``result`` is one of :data:`RESULTS`; ``evidence`` in words."""

    claim: Claim
    result: str
    evidence: str
    details: dict = field(default_factory=dict)
    group: str | None = None

    @property
    def supported(self) -> bool:
        return self.result == "supported"

    def __repr__(self) -> str:
        return f"ClaimResult({self.claim.text!r}: {self.result})"


@dataclass(frozen=True, repr=False, eq=False)
class ClaimCheck:
    """The claims of one call, decided together; ``guarantee`` says what holds jointly."""

    results: tuple[ClaimResult, ...]
    alpha: float
    test: str
    unit: str
    family_size: int
    guarantee: str
    rankings: dict = field(default_factory=dict)
    details: dict = field(default_factory=dict)
    spec: MethodSpec | None = None

    @property
    def all_supported(self) -> bool:
        return all(r.supported for r in self.results)

    def to_frame(self) -> pd.DataFrame:
        """One row per claim: claim, result, evidence (and the group, for run comparisons)."""
        frame = pd.DataFrame(
            {
                "claim": [r.claim.text for r in self.results],
                "result": [r.result for r in self.results],
                "evidence": [r.evidence for r in self.results],
            }
        )
        if any(r.group is not None for r in self.results):
            frame.insert(0, "group", [r.group or "" for r in self.results])
        return frame

    def to_dict(self) -> dict:
        """JSON-safe: the level, the family, every claim with its numbers, the guarantee."""
        return {
            "alpha": self.alpha,
            "test": self.test,
            "unit": self.unit,
            "multiplicity": "holm",
            "family_size": self.family_size,
            "all_supported": self.all_supported,
            "claims": [
                {
                    "claim": r.claim.text,
                    "kind": r.claim.kind,
                    "statement": r.claim.statement(),
                    **({"group": r.group} if r.group is not None else {}),
                    "result": r.result,
                    "evidence": r.evidence,
                    **jsonable(r.details),
                }
                for r in self.results
            ],
            "guarantee": self.guarantee,
            **({"details": jsonable(self.details)} if self.details else {}),
            **({"spec": self.spec.to_dict()} if self.spec is not None else {}),
        }

    def __repr__(self) -> str:
        n = sum(r.supported for r in self.results)
        lines = [f"ClaimCheck({n} of {len(self.results)} claims supported, alpha={self.alpha:g})"]
        lines += [f"  {r.result:<13} {r.claim.text}" for r in self.results]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        table = self.to_frame().to_html(index=False, escape=True, border=0)
        n = sum(r.supported for r in self.results)
        head = f"{n} of {len(self.results)} claims supported (alpha = {self.alpha:g})"
        return (
            f"<div><p><b>{html.escape(head)}</b></p>{table}"
            f"<p><small>{html.escape(self.guarantee)}</small></p></div>"
        )


# ---------------------------------------------------------------------- deciding
@dataclass(frozen=True)
class ClaimGroup:
    """Claims decided on one units x models matrix (``name`` labels it: a task, for runs)."""

    units: UnitScores
    claims: tuple[Claim, ...]
    name: str | None = None
    details: dict = field(default_factory=dict)


def _resolve(claim: Claim, models: Sequence[str]) -> None:
    names = [claim.first] + ([claim.second] if claim.second is not None else [])
    for value, pos in zip(names, claim.positions):
        if value not in models:
            close = difflib.get_close_matches(value, models, n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            shown = ", ".join(map(repr, models[:8])) + (", ..." if len(models) > 8 else "")
            raise _claim_error(
                claim.text, pos, f"no model {value!r} in the data{hint} (models: {shown})"
            )
    if claim.second is not None and claim.first == claim.second:
        raise _claim_error(claim.text, claim.positions[1], "a model compared with itself")
    if claim.kind == "top" and claim.k > len(models):
        raise ValueError(
            f"claim {claim.text!r}: top {claim.k} of only {len(models)} models is always true"
        )


def _margin_units(group: ClaimGroup, margin: float) -> UnitScores:
    """The units of the models that a group's hypotheses with this (non-zero) margin compare.

    A margin test of a pair reads only the pair's two columns, so it is done on those models
    alone, not on all M (M - 1) pairs (issue 30: on 2,461 models the margin tests of one claim
    took as long as all pairs of the rank claims). Below ``CONTINUOUS_MIN_UNITS`` units, where
    the few-units warning depends on every pair of the test, all models are kept.
    """
    from rankci.evidence.auto import CONTINUOUS_MIN_UNITS

    units = group.units
    if units.n_units < CONTINUOUS_MIN_UNITS:
        return units
    names = {
        name
        for claim in group.claims
        for first, second, c in (*_needs(claim)[0], *_needs(claim)[1])
        if float(round(c, 12)) + 0.0 == margin
        for name in (first, second)
    }
    keep = [j for j, name in enumerate(units.models) if name in names]
    if len(keep) == units.n_models:
        return units
    return dataclasses.replace(
        units, values=units.values[:, keep], models=tuple(units.models[j] for j in keep)
    )


def _needs(claim: Claim) -> tuple[list, list]:
    """The (first, second, margin) hypotheses whose rejection supports / contradicts a claim."""
    a, b, c = claim.first, claim.second, claim.margin
    if claim.kind == "better":
        return [(a, b, c)], [(b, a, -c)]
    if claim.kind == "equivalent":
        return [(a, b, -c), (b, a, -c)], [(a, b, c), (b, a, c)]
    return [], []


class _Rows:
    """The hypotheses of a call's Holm family, by column: blocks of entries ``(j, l)`` of one
    :class:`Pairwise` each (the M(M - 1) ordered pairs of a rank claim are one block), read with
    array indexing, never a Python loop over pairs; ``rows[i]`` is row ``i`` as a dict (estimate,
    se, df, n, pvalue, rule and, for the sign test, wins and discordant)."""

    def __init__(self, test: str):
        self.test = test
        self.blocks: list[tuple[Pairwise, np.ndarray, np.ndarray]] = []
        self.size = 0
        self._columns: dict[str, np.ndarray] = {}
        self._plain: dict[int, np.ndarray | None] = {}

    def __len__(self) -> int:
        return self.size

    def add(self, pw: Pairwise, first, second) -> np.ndarray:
        """Append the entries ``(first[i], second[i])`` of ``pw``; their row numbers."""
        first, second = np.asarray(first, dtype=np.intp), np.asarray(second, dtype=np.intp)
        self.blocks.append((pw, first, second))
        self._columns.clear()
        start, self.size = self.size, self.size + first.size
        return np.arange(start, self.size)

    def rule(self, pw: Pairwise) -> str:
        return pw.options.get("test_rule", self.test)

    def _block(self, name: str, pw: Pairwise, j: np.ndarray, l: np.ndarray) -> np.ndarray:
        if name == "pvalue":
            p = np.asarray(pw.pvalue, dtype=float)[j, l]
            return np.where(np.isfinite(p), p, 1.0)
        if name in ("estimate", "n"):
            return np.asarray(getattr(pw, name))[j, l].astype(float if name == "estimate" else int)
        if name in ("se", "df"):
            value = getattr(pw, name)
            fill = float("nan") if name == "se" else float("inf")
            return np.full(j.size, fill) if value is None else np.asarray(value, float)[j, l]
        stat = np.asarray(pw.statistic, dtype=float) if pw.statistic is not None else None
        if self.rule(pw) != "sign" or stat is None:
            return np.full(j.size, np.nan)
        if name == "wins":  # the exact McNemar test: b and D = b + c of the pair
            return stat[j, l]
        return stat[j, l] + stat[l, j]  # discordant

    def column(self, name: str) -> np.ndarray:
        """One field of every row, in row order."""
        if name not in self._columns:
            parts = [self._block(name, pw, j, l) for pw, j, l in self.blocks]
            self._columns[name] = (
                np.concatenate(parts) if parts else np.zeros(0, int if name == "n" else float)
            )
        return self._columns[name]

    def rules(self) -> set[str]:
        return {self.rule(pw) for pw, j, _ in self.blocks if j.size}

    def all_sign(self) -> bool:
        return all(self.rule(pw) == "sign" for pw, j, _ in self.blocks if j.size)

    def plain(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The t's p-values without the floor and the t statistics of every row; None unless
        every row has them (``plain_pvalues`` computed once per Pairwise)."""
        ps, ts = [], []
        for pw, j, l in self.blocks:
            if id(pw) not in self._plain:
                self._plain[id(pw)] = plain_pvalues(pw)
            p = self._plain[id(pw)]
            if p is None:
                return None
            ps.append(np.asarray(p, float)[j, l])
            ts.append(np.asarray(pw.statistic, float)[j, l])
        return (np.concatenate(ps), np.concatenate(ts)) if ps else None

    def __getitem__(self, i: int) -> dict:
        i = int(i)
        pw, j, l = next(b for b in self._locate(i))
        row = {
            "estimate": float(pw.estimate[j, l]),
            "se": float(pw.se[j, l]) if pw.se is not None else float("nan"),
            "df": float(pw.df[j, l]) if pw.df is not None else float("inf"),
            "n": int(pw.n[j, l]),
            "pvalue": float(self.column("pvalue")[i]),
            "rule": self.rule(pw),
        }
        if row["rule"] == "sign":
            row["wins"] = float(pw.statistic[j, l])
            row["discordant"] = float(pw.statistic[j, l] + pw.statistic[l, j])
        return row

    def _locate(self, i: int):
        start = 0
        for pw, j, l in self.blocks:
            if i < start + j.size:
                yield pw, int(j[i - start]), int(l[i - start])
                return
            start += j.size
        raise IndexError(i)


def decide_claims(
    groups: Sequence[ClaimGroup],
    alpha: float = 0.05,
    test: str = "auto",
    *,
    spec: MethodSpec | None = None,
) -> ClaimCheck:
    """Decide the claims of every group in one Holm family at level ``alpha``.

    The family holds, per group, the hypotheses of :func:`_needs` (each once) and, when a group
    has a rank claim, all M(M - 1) ordered pairs ``H(j, l, 0)`` of that group; the rank claims
    read the rank intervals counted (:func:`rankci.ranking.ranking_from_dominance`) from the
    rejected pairs. Holm's strong control makes all decisions of the call hold jointly with
    probability >= 1 - alpha (module docstring). ``spec`` gives alpha and the test at once
    (:func:`claims_spec`); the groups' units are already made.
    """
    spec = claims_spec(spec, {"alpha": alpha, "test": test}, "decide_claims")
    alpha, test = spec.alpha, spec.test
    exact_bound_n = spec.test_options.get("exact_bound_n", 0)  # the opt-in floor
    keys: dict[tuple, int] = {}
    rows = _Rows(test)
    tests: dict[tuple, Pairwise] = {}
    pair_index: dict[int, np.ndarray] = {}  # group -> (M, M) row of H(j, l, 0), -1 on the diagonal

    def evidence(g: int, margin: float) -> Pairwise:
        if (g, margin) not in tests:
            units = groups[g].units
            if hasattr(units, "margin_tests"):  # votes: z tests of fitted strengths
                tests[(g, margin)] = units.margin_tests(margin)
            else:
                tests[(g, margin)] = (
                    pairwise_tests(units, test, exact_bound_n=exact_bound_n)
                    if margin == 0
                    else signed_margin_tests(
                        _margin_units(groups[g], margin), margin, test, exact_bound_n
                    )
                )
        return tests[(g, margin)]

    def key(g: int, first: str, second: str, margin: float) -> int:
        margin = float(round(margin, 12)) + 0.0
        if margin == 0 and g in pair_index:
            models = groups[g].units.models
            return int(pair_index[g][models.index(first), models.index(second)])
        k = (g, first, second, margin)
        if k not in keys:
            pw = evidence(g, margin)
            keys[k] = int(rows.add(pw, [pw.models.index(first)], [pw.models.index(second)])[0])
        return keys[k]

    plans = []
    for g, group in enumerate(groups):
        models = list(group.units.models)
        for claim in group.claims:
            _resolve(claim, models)
        pairs = None
        if any(c.kind == "top" for c in group.claims):
            # every ordered pair (a, b), a != b, in the models' order: one block of rows
            pw = evidence(g, 0.0)
            where = {name: i for i, name in enumerate(pw.models)}
            perm = np.array([where[name] for name in models], dtype=np.intp)
            m = len(models)
            first, second = np.nonzero(~np.eye(m, dtype=bool))
            pairs = np.full((m, m), -1, dtype=np.int64)
            pairs[first, second] = rows.add(pw, perm[first], perm[second])
            pair_index[g] = pairs
        for claim in group.claims:
            support, contra = _needs(claim)
            plans.append((g, claim, [key(g, *h) for h in support], [key(g, *h) for h in contra]))
        plans.append((g, None, pairs, None))
    plain = rows.plain()
    pvalues = rows.column("pvalue")
    rejected = reject(pvalues, alpha) if len(rows) else np.zeros(0, dtype=bool)
    adjusted = adjust_pvalues(pvalues) if len(rows) else np.zeros(0)
    family = len(rows)
    details = {}
    if len(rows) and not rejected.any():
        details["nothing_certified"] = _explain_undecided(rows, plain, groups, test, alpha, spec)
    own = getattr(groups[0].units, "tests_words", None) if groups else None
    rankings = _rankings(groups, plans, rejected, alpha, test, family, own)
    results = []
    for g, claim, support, contra in plans:
        if claim is None:
            continue
        name = groups[g].name
        if claim.kind == "top":
            results.append(_rank_result(claim, rankings[g], name))
        else:
            results.append(
                _pair_result(
                    claim, support, contra, rows, adjusted, rejected, groups[g], alpha, name
                )
            )
    family_record = _family_record(plans, pvalues, alpha)
    if family_record["changed"]:
        results = _explain_family_change(results, plans, rows, pvalues, family_record, alpha)
    details["family"] = {k: v for k, v in family_record.items() if k != "changed"}
    unit = groups[0].units.unit if groups else "item"
    n_units = max((grp.units.n_units for grp in groups), default=0)
    ranks = (
        " (the rank claims read the simultaneous rank intervals counted from the ordered "
        "pairs of this family)"
        if rankings
        else ""
    )
    warned = sorted({w for pw in tests.values() if (w := pw.options.get("small_sample_warning"))})
    caveat = "".join(f" Warning: {w}." for w in warned)
    words = _tests_words(test, rows, groups)
    scope = getattr(groups[0].units, "scope", None) if groups else None
    guarantee = (
        f"With probability at least {1 - alpha:.0%}, every claim reported supported is true and "
        f"every claim reported contradicted is false, all at once: Holm at level {alpha:g} over "
        f"the {family} one-sided {words} of this call on up to {n_units} "
        f"{unit} units{ranks}; inference extends to {scope or UNIT_SCOPE[unit]}.{caveat}"
    )
    if warned:
        details["small_sample_warning"] = warned[0]
    return ClaimCheck(
        results=tuple(results),
        alpha=alpha,
        test=test,
        unit=unit,
        family_size=family,
        guarantee=guarantee,
        rankings={(groups[g].name or ""): r for g, r in rankings.items()},
        details=details,
        spec=spec,
    )


def _family_record(plans, pvalues: np.ndarray, alpha: float) -> dict:
    """What the Holm family of a call is made of: the tests of the pair claims (each hypothesis
    once) and the M(M - 1) ordered pairs that the rank claims read; ``changed`` lists the pair
    claims' tests when rank claims grew the family (their decisions may then differ from a call
    without the rank claims)."""
    claim_keys = sorted(
        {i for _, c, s, t in plans if c is not None and c.kind != "top" for i in (*s, *t)}
    )
    blocks = [pairs[pairs >= 0] for _, c, pairs, _ in plans if c is None and pairs is not None]
    rank_keys = np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.int64)
    extra = int(rank_keys.size - np.isin(np.asarray(claim_keys, dtype=np.int64), rank_keys).sum())
    size = len(pvalues)
    ranked = [c.text for _, c, _, _ in plans if c is not None and c.kind == "top"]
    parts = []
    if claim_keys:
        parts.append(f"{len(claim_keys)} for the pair claims")
    if rank_keys.size:
        parts.append(
            f"{extra} more for the ordered pairs of every two models, which the rank claims "
            f"({', '.join(repr(t) for t in ranked)}) read"
        )
    sentence = f"the Holm family of this call has {size} tests" + (
        f": {' and '.join(parts)}" if len(parts) > 1 else ""
    )
    return {
        "size": size,
        "pair_claim_tests": len(claim_keys),
        "rank_claim_tests": extra,
        "sentence": sentence,
        "changed": claim_keys if (claim_keys and extra) else [],
    }


def _explain_family_change(results, plans, rows, pvalues, record, alpha) -> list:
    """A pair claim decided otherwise than it would be in the family of the pair claims alone
    (the call without its rank claims) says so, and why: the rank claims grew the family."""
    keys = np.asarray(record["changed"])
    alone = np.zeros(len(rows), dtype=bool)
    alone_adjusted = np.ones(len(rows))
    alone[keys] = reject(pvalues[keys], alpha)
    alone_adjusted[keys] = adjust_pvalues(pvalues[keys])
    out, pair_plans = [], iter([p for p in plans if p[1] is not None])
    for result in results:
        _, claim, support, contra = next(pair_plans)
        if claim.kind == "top":
            out.append(result)
            continue
        supported = all(alone[i] for i in support)
        verdict = (
            "supported"
            if supported
            else "contradicted"
            if any(alone[i] for i in contra)
            else "not decided"
        )
        if verdict == result.result:
            out.append(result)
            continue
        adjusted = max(float(alone_adjusted[i]) for i in support)
        why = (
            f"; without the rank claims it would be {verdict} (Holm over the "
            f"{record['pair_claim_tests']} tests of the pair claims, adjusted p "
            f"{_p(adjusted)}): the rank claims add {record['rank_claim_tests']} tests to the "
            f"family, {record['size']} in all"
        )
        details = {**result.details, "without_rank_claims": verdict}
        out.append(dataclasses.replace(result, evidence=result.evidence + why, details=details))
    return out


def _tests_words(test: str, rows: _Rows, groups: Sequence[ClaimGroup] = ()) -> str:
    """The family's tests in words; for ``auto``, the rules its hypotheses were tested by; for
    evidence that names its own tests (``tests_words``: the z tests of a vote fit), those."""
    own = getattr(groups[0].units, "tests_words", None) if groups else None
    if own:
        return own
    if test != "auto":
        return f"paired {test} tests"
    rules = rows.rules()
    if rules == {"sign"}:
        return "paired tests (test auto: exact McNemar (sign) tests on 0/1 units)"
    if "sign" in rules:
        return (
            "paired tests (test auto: exact McNemar (sign) tests on 0/1 units for the hypotheses "
            "without a margin, paired t for the others)"
        )
    return "paired tests (test auto: paired t)"


def _explain_undecided(rows, plain, groups, test, alpha, spec) -> str:
    """No claim decided: the family's evidence against Holm's first threshold (warned)."""
    full = plain is not None
    sign = rows.all_sign()
    return explain_pvalues(
        rows.column("pvalue"),
        rows.column("n"),
        unit=groups[0].units.unit,
        test=test,
        alpha=alpha,
        floor=int(spec.test_options.get("exact_bound_n", 0)),
        plain=plain[0] if full else None,
        statistic=plain[1] if full else None,
        wins=rows.column("wins") if sign else None,
        discordant=rows.column("discordant") if sign else None,
        prefix="no claim is decided: ",
        stacklevel=4,
    )


def claims_spec(spec: MethodSpec | None, keywords: dict, caller: str) -> MethodSpec:
    """The method of a check: ``spec``, or the keywords (alpha, unit, test, missing) as one.

    Claims are decided by one Holm family of one-sided paired tests with margins of their own,
    so the spec's multiplicity is Holm, its coverage simultaneous and its delta 0; its test is
    auto, t or z (with its opt-in ``exact_bound_n``).

    Examples
    --------
    >>> claims_spec(None, {"alpha": 0.1, "test": "z"}, "check_claims").describe()
    'holm over one-sided paired z tests on item units, simultaneous coverage, alpha = 0.1'
    """
    spec, _ = resolve_spec(spec, None, keywords, {}, caller, accepted=_KEYWORDS)
    check_choice("test", spec.test, SIGNED_MARGIN_TESTS)
    if spec.multiplicity != "holm" or spec.coverage != "simultaneous" or spec.delta != 0:
        raise ValueError(
            f"{caller}() decides every claim in one Holm family with margins of its own: the "
            "spec's multiplicity must be 'holm', its coverage 'simultaneous' and its delta 0, "
            f"got {spec.multiplicity!r}, {spec.coverage!r} and {spec.delta:g}"
        )
    return spec


#: the keywords of check_claims, for the message on an unknown one
_KEYWORDS = "data, claims, alpha, unit, test, missing, spec"


def _rankings(groups, plans, rejected, alpha, test, family, own=None) -> dict[int, Ranking]:
    words = own or f"paired {test} tests"
    out = {}
    for g, claim, pairs, _ in plans:
        if claim is not None or pairs is None:
            continue
        units = groups[g].units
        models = units.models
        dominance = np.zeros((len(models), len(models)), dtype=bool)
        off = pairs >= 0
        dominance[off] = rejected[pairs[off]]
        out[g] = ranking_from_dominance(
            models,
            units.model_scores(),
            dominance,
            alpha=alpha,
            coverage="simultaneous",
            procedure={
                "test": test,
                "unit": units.unit,
                "delta": 0.0,
                "multiplicity": "holm",
                "missing": units.missing,
                "family_size": family,
            },
            n_units=units.n_units,
            excluded=dict(units.excluded),
            guarantee=(
                f"With probability at least {1 - alpha:.0%}, every rank interval, certified "
                f"dominance and tier is true simultaneously, and so is every other claim of the "
                f"check (Holm over {family} one-sided {words})."
            ),
        )
    return out


def _interval(row: dict, alpha: float) -> tuple[float, float]:
    quantile = (
        special.stdtrit(max(row["df"], 1.0), 1 - alpha / 2)
        if np.isfinite(row["df"])
        else special.ndtri(1 - alpha / 2)
    )
    return row["estimate"] - quantile * row["se"], row["estimate"] + quantile * row["se"]


def _pair_result(claim, support, contra, rows, adjusted, rejected, group, alpha, name):
    a, b = claim.first, claim.second
    row = rows[support[0]]
    low, high = _interval(row, alpha)
    unit = group.units.unit
    head = (
        f"{a} - {b} = {row['estimate']:+.4f} (se {row['se']:.4f}; {1 - alpha:.0%} interval "
        f"[{low:+.4f}, {high:+.4f}], for this claim alone; {row['n']} {unit} units)"
    )
    p_support = max(rows[i]["pvalue"] for i in support)
    adj_support = max(float(adjusted[i]) for i in support)
    adj_contra = min(float(adjusted[i]) for i in contra)
    is_supported = all(rejected[i] for i in support)
    is_contradicted = any(rejected[i] for i in contra)
    if claim.kind == "better":
        tested = f"one-sided test of {a} - {b} <= {claim.margin:g}: p {_p(p_support)}"
    else:
        tested = (
            f"two one-sided tests of {a} - {b} <= -{claim.margin:g} and >= {claim.margin:g}: "
            f"p {_p(p_support)} (the larger)"
        )
    words = f"{head}; {tested}, Holm-adjusted {format_pvalue(adj_support)}"
    if is_contradicted and not is_supported:
        result = "contradicted"
        opposite = (
            f"{b} - {a} > {-claim.margin:g}"
            if claim.kind == "better"
            else f"|{a} - {b}| > {claim.margin:g}"
        )
        words += f"; the opposite, {opposite}, is certified (Holm-adjusted p {_p(adj_contra)})"
    elif is_supported:
        result = "supported"
    else:
        result = "not decided"
        words += (
            f", above alpha = {alpha:g}; the opposite is not certified either "
            f"(Holm-adjusted p {_p(adj_contra)})"
        )
    details = {
        "estimate": row["estimate"],
        "se": row["se"],
        "df": row["df"],
        "n": row["n"],
        "interval": [low, high],
        "pvalue": p_support,
        "adjusted_pvalue": adj_support,
        "opposite_adjusted_pvalue": adj_contra,
        "margin": claim.margin,
        "first": a,
        "second": b,
        **group.details,
    }
    return ClaimResult(claim, result, words, details, name)


def _rank_result(claim: Claim, ranking: Ranking, name) -> ClaimResult:
    j = ranking.models.index(claim.first)
    low, up, k = int(ranking.lower[j]), int(ranking.upper[j]), claim.k
    m = ranking.n_models
    words = (
        f"{claim.first}: simultaneous rank interval [{low}, {up}] (observed rank "
        f"{int(ranking.rank[j])} of {m}, score {float(ranking.score[j]):.4f}); certified better "
        f"than {m - up} and worse than {low - 1} of the other {m - 1} models"
    )
    if up <= k:
        result = "supported"
    elif low > k:
        result = "contradicted"
        words += f"; at least {k} models are certified better, so it is not in the top {k}"
    else:
        result = "not decided"
        words += f"; the top {k} needs an upper bound <= {k}"
    details = {"rank_interval": [low, up], "rank": int(ranking.rank[j]), "k": k}
    return ClaimResult(claim, result, words, details, name)


def check_claims(
    data: Scores | pd.DataFrame | str,
    claims: Sequence[str | Claim],
    *,
    alpha: float = 0.05,
    unit: str = "item",
    test: str = "auto",
    missing: str = "complete",
    spec: MethodSpec | None = None,
) -> ClaimCheck:
    """Decide claims about the models of one leaderboard, all at once at level ``alpha``.

    Parameters
    ----------
    data : Scores, DataFrame or path
    claims : sequence of str or Claim
        In the grammar of the module docstring (docs/check.md).
    alpha : float, default 0.05
        Every supported claim is true and every contradicted claim false, jointly, with
        probability at least 1 - alpha.
    unit : {"item", "observation", "cluster", "prompt"}
    test : {"auto", "t", "z"}
        The one-sided paired test. The default ``auto`` uses the exact McNemar (sign) test for
        the hypotheses without a margin (``A > B``, rank claims) on pairs of 0/1 units, and the
        paired t on n - 1 df for the others (a margin on the mean difference has no exact
        McNemar form); ``exact_bound_n`` (in ``spec.test_options``) is the t's opt-in floor.
    missing : {"complete", "pairwise"}
    spec : MethodSpec, optional
        The method at once (alpha, unit, test and its ``exact_bound_n``, missing), for example
        ``check.spec``; then pass none of those keywords (see :func:`claims_spec`).

    Returns
    -------
    ClaimCheck
        ``check.spec`` is the validated :class:`~rankci.method.MethodSpec`.

    Examples
    --------
    >>> import rankci
    >>> from rankci.analyses.claims import check_claims
    >>> check = check_claims(rankci.datasets.load_mmlu_pro(),
    ...                      ["'gemini-3.1-pro [merged dir]' is best", "Yi-6B > Llama-2-7b-hf"])
    >>> [r.result for r in check.results]
    ['supported', 'supported']
    """
    keywords = {"alpha": alpha, "unit": unit, "test": test, "missing": missing}
    spec = claims_spec(spec, keywords, "check_claims")
    parsed = tuple(c if isinstance(c, Claim) else parse_claim(c) for c in claims)
    if not parsed:
        raise ValueError("no claim given: pass at least one claim")
    spec, scores = apply_trials(spec, as_scores(data), "check_claims")
    units = scores.units(spec.unit, spec.missing)
    return with_trials(decide_claims([ClaimGroup(units, parsed)], spec=spec), scores)


def with_trials(check: ClaimCheck, scores: Scores) -> ClaimCheck:
    """The check of per-item scores made from repeated trials says by which rule: its
    guarantee ends with the rule's sentence and its details carry ``repeated_trials`` (the
    rule is also ``check.spec.trials``; :func:`rankci.leaderboard.apply_trials`)."""
    record = scores.notes.get("repeated_trials")
    if not record:
        return check
    from rankci.trials import per_item_sentence

    return dataclasses.replace(
        check,
        guarantee=check.guarantee + " " + per_item_sentence(record),
        details={**check.details, "repeated_trials": jsonable(record)},
    )


def _p(p: float) -> str:
    """``= 0.0123`` or ``< 1e-300`` (after "p")."""
    text = format_pvalue(p)
    return text if text.startswith("<") else f"= {text}"
