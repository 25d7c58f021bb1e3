"""Rank intervals: rankci against honestboard and (when R is here) csranks."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

import rankci

from .harness import Dataset, Row, Run, r_unavailable, rscript_with, run_r, timed

CSRANKS = """
x <- scan("{dir}/mean.txt", quiet = TRUE)
S <- as.matrix(read.table("{dir}/cov.txt"))
set.seed(1)
t <- system.time(r <- csranks::csranks(x, S, coverage = 0.95, cstype = "two-sided",
                                        simul = TRUE, R = 1000))[["elapsed"]]
write.table(cbind(r$L, r$U), "{dir}/ranks.txt", row.names = FALSE, col.names = FALSE)
cat(t)
"""


def rank_intervals(data: Dataset, run: Run) -> list[Row]:
    task = "rank intervals"
    scores = data.scores
    own = timed(
        task, data, "rankci rank (paired t + Holm, simultaneous)", lambda: rankci.rank(scores), run
    )
    own.agreement = f"mean width {np.mean(own.result.upper - own.result.lower):.2f}"
    rows = [own]

    def honestboard():
        import honestboard

        return honestboard.Board(data.model_names, data.matrix.T).rank_summary(B=1000)

    peer = timed(task, data, "honestboard rank_summary (B = 1,000)", honestboard, run)
    if peer.result is not None:
        width = np.mean([r["rank_hi"] - r["rank_lo"] for r in peer.result])
        peer.agreement = f"mean width {width:.2f}"
        peer.note = "percentile bootstrap of ranks: a different quantity, no coverage guarantee"
    rows.append(peer)

    # csranks' construction in rankci, timed from the data as a user would start
    def maxt():
        moments = rankci.means_covariance(scores)
        return rankci.maxt_ranking_from_cov(moments.mean, moments.cov, stepdown=False, rng=1)

    own_maxt = timed(task, data, "rankci maxt_ranking_from_cov (csranks' max-t)", maxt, run)
    rows.append(own_maxt)
    rows.append(_csranks(task, data, scores, own_maxt))
    return rows


def _csranks(task: str, data: Dataset, scores: rankci.Scores, own: Row) -> Row:
    tool = "R csranks::csranks (simul, R = 1,000)"
    rscript = rscript_with("csranks")
    if rscript is None:
        return r_unavailable(task, data, tool, "csranks")
    with tempfile.TemporaryDirectory() as tmp:
        moments = rankci.means_covariance(scores)
        np.savetxt(Path(tmp) / "mean.txt", moments.mean)
        np.savetxt(Path(tmp) / "cov.txt", moments.cov)
        inside, wall = run_r(rscript, CSRANKS.format(dir=tmp))
        bounds = np.loadtxt(Path(tmp) / "ranks.txt", ndmin=2)
    row = Row(
        task,
        data.label,
        tool,
        inside,
        None,
        note=f"time inside R (Rscript process {wall:.1f} s); from means and Σ",
    )
    if own.result is not None:
        gap = np.abs(bounds - np.column_stack([own.result.lower, own.result.upper])).max()
        row.agree("rank bound", float(gap), 1.0, " (Monte-Carlo critical values)")
    return row
