"""The input formats ``rankci`` reads, as plain tuples (no imports, so the command line is fast).

:mod:`rankci.io` and :mod:`rankci.adapters` take their lists from here.
"""

#: table formats of :func:`rankci.io.read_scores` ("auto": from the file extension)
FORMATS = ("auto", "csv", "tsv", "parquet", "jsonl")
#: table layouts: one row per model and item (long) or one column per model (wide)
LAYOUTS = ("auto", "long", "wide")
#: vote-table layouts of :func:`rankci.votes.read_votes` ("auto": from the table's fields; see
#: :mod:`rankci.votes.layouts` for the fields each is recognised by)
VOTE_LAYOUTS = ("auto", "battles", "lmarena", "arena-hard", "mt-bench", "alpaca-eval")
#: the evaluation-log readers: format name -> the module of :mod:`rankci.adapters` that reads it.
#: Each such module defines ``READER``, a :class:`rankci.adapters.LogReader`; adding a reader is
#: that module and one line here (DEVELOPING.md, "Add a reader").
LOG_READERS = {"lm-eval": "lm_eval", "inspect": "inspect", "helm": "helm"}
#: evaluation-log formats of :func:`rankci.adapters.read_log`
LOG_FORMATS = tuple(LOG_READERS)
