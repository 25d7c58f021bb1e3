"""The input formats ``rankci`` reads, as plain tuples (no imports, so the command line is fast).

:mod:`rankci.io` and :mod:`rankci.adapters` take their lists from here.
"""

#: table formats of :func:`rankci.io.read_scores` ("auto": from the file extension)
FORMATS = ("auto", "csv", "tsv", "parquet", "jsonl")
#: table layouts: one row per model and item (long) or one column per model (wide)
LAYOUTS = ("auto", "long", "wide")
#: the evaluation-log readers: format name -> the module of :mod:`rankci.adapters` that reads it.
#: Each such module defines ``READER``, a :class:`rankci.adapters.LogReader`; adding a reader is
#: that module and one line here (DEVELOPING.md, "Add a reader").
LOG_READERS = {"lm-eval": "lm_eval", "inspect": "inspect", "helm": "helm"}
#: evaluation-log formats of :func:`rankci.adapters.read_log`
LOG_FORMATS = tuple(LOG_READERS)
