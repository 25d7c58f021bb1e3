"""Saving and restoring a monitor (crash-safe evaluations): one ``.npz`` file, no pickles.

One ``.npz`` file holds the configuration and history as JSON (the array ``meta``) plus every
array of the wealths, the certifier and the monitor, written to a temporary file and renamed into
place, so a crash while saving leaves the previous state intact. Restoring rebuilds the monitor
from its configuration and loads the arrays bit for bit: feeding the same items afterwards gives
exactly what an uninterrupted monitor gives.

Three kinds of monitor are saved, each with its own format tag (kind and version in one string,
``meta["config"]["format"]``):

* ``rankci-monitor-2``: a :class:`~rankci.sequential.Monitor` (models fixed at creation): the
  models and the monitor's :class:`~rankci.sequential.spec.MonitorSpec`
  (``{"format": "rankci-monitor-2", "models": [...], "spec": spec.to_dict()}``). Files of the
  first format (``rankci-monitor-1``, written before the spec existed) held the settings at the
  top of the configuration; they load too, their spec rebuilt from those settings;
* ``rankci-open-monitor-1``: an :class:`~rankci.sequential.OpenMonitor` (``entry="open"``): the
  entrants in entry order and one e-process group per entry (:mod:`.entry`);
* ``rankci-arena-monitor-1``: a :class:`rankci.votes.sequential.ArenaMonitor` (votes).

Every kind records the withdrawals, voids and named items that it has. A file is read only by the
class of its kind, in a format this version knows (:func:`read_state`): a file of another kind,
of an unknown (newer) format, or one that is damaged is refused with a message naming it, never
reinterpreted.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections.abc import Mapping

import numpy as np

from rankci.sequential.spec import MonitorSpec
from rankci.sequential.wealth import PairWealth

__all__ = [
    "ARENA_FORMAT",
    "FORMAT",
    "KINDS",
    "OLD_FORMATS",
    "OPEN_FORMAT",
    "changes_meta",
    "load_changes",
    "loaded",
    "read_state",
    "restore_monitor",
    "save_monitor",
    "spec_of",
    "write_state",
]

FORMAT = "rankci-monitor-2"
#: Earlier formats that still load: the settings at the top of the configuration.
OLD_FORMATS = ("rankci-monitor-1",)
#: An open-entry monitor (``entry="open"``), first format.
OPEN_FORMAT = "rankci-open-monitor-1"
#: An arena monitor (votes), first format.
ARENA_FORMAT = "rankci-arena-monitor-1"
#: Every format this version reads -> the kind of monitor it holds and the class that restores it.
KINDS = {
    FORMAT: ("monitor", "Monitor.restore"),
    OLD_FORMATS[0]: ("monitor", "Monitor.restore"),
    OPEN_FORMAT: ("open-entry monitor", "OpenMonitor.restore"),
    ARENA_FORMAT: ("arena monitor", "ArenaMonitor.restore"),
}


def write_state(path: str | os.PathLike, meta: Mapping, arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``meta`` (as JSON, the array ``meta``) and ``arrays`` to one ``.npz``, atomically.

    The file is written beside ``path``, flushed to disk and renamed into place
    (:func:`os.replace`), so a crash while saving leaves the previous file intact.

    Parameters
    ----------
    path : str or os.PathLike
        Destination file.
    meta : mapping
        JSON-safe; its ``config["format"]`` names the kind and version (:data:`KINDS`).
    arrays : mapping of str to numpy.ndarray
        Numeric or boolean arrays (never objects: the file is read with ``allow_pickle=False``).

    Returns
    -------
    None

    Examples
    --------
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "s.npz")
    ...     write_state(path, {"config": {"format": FORMAT}}, {"x": np.arange(3)})
    ...     form, meta, arrays = read_state(path, FORMAT)
    >>> form, arrays["x"].tolist()
    ('rankci-monitor-2', [0, 1, 2])
    """
    buffer = io.BytesIO()
    np.savez(buffer, meta=np.array(json.dumps(meta)), **arrays)
    path = os.fspath(path)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as handle:
        handle.write(buffer.getvalue())
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def read_state(path: str | os.PathLike, *expected: str) -> tuple[str, dict, dict]:
    """Read a saved monitor of one of the ``expected`` formats: (format, meta, arrays).

    Parameters
    ----------
    path : str or os.PathLike
        A file written by :func:`write_state`.
    *expected : str
        The formats the caller restores (:data:`KINDS`).

    Returns
    -------
    tuple
        The format tag, the JSON ``meta`` and every other array by name.

    Raises
    ------
    ValueError
        Naming the file: not a readable ``.npz`` of a saved rankci monitor (missing, damaged or
        truncated, an object array), a monitor of another kind (with the class that restores
        it), or a format this version does not know (a newer rankci wrote it): such a file is
        refused, never reinterpreted.

    Examples
    --------
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "s.npz")
    ...     write_state(path, {"config": {"format": ARENA_FORMAT}}, {})
    ...     try:
    ...         read_state(path, FORMAT)
    ...     except ValueError as error:
    ...         print(str(error).split(": ", 1)[1])
    it holds a saved arena monitor (rankci-arena-monitor-1); restore it with ArenaMonitor.restore
    """
    name = os.fspath(path)
    try:
        with np.load(name, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
        meta = json.loads(str(arrays.pop("meta")))
        form = meta["config"]["format"]
    except FileNotFoundError:
        raise ValueError(f"{name!r}: no such file (a saved rankci monitor)") from None
    except KeyError:
        raise ValueError(f"{name!r} is not a saved rankci monitor (no format recorded)") from None
    except (OSError, ValueError, EOFError, TypeError, zipfile.BadZipFile) as error:
        raise ValueError(
            f"{name!r} is not a saved rankci monitor, or is damaged: {error}"
        ) from None
    if form in expected:
        return form, meta, arrays
    if form in KINDS:
        kind, how = KINDS[form]
        raise ValueError(f"{name!r}: it holds a saved {kind} ({form}); restore it with {how}")
    known = ", ".join(sorted(KINDS))
    raise ValueError(
        f"{name!r} was saved in format {form!r}, which this version of rankci does not read (it "
        f"reads {known}); it is refused rather than reinterpreted: restore it with the rankci "
        "version that wrote it"
    )


def spec_of(name: str, values: Mapping) -> MonitorSpec:
    """The saved :class:`~rankci.sequential.spec.MonitorSpec`, or an error naming the file."""
    try:
        return MonitorSpec.from_dict(values)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name!r}: the saved monitor settings are not valid: {error}") from None


def changes_meta(monitor) -> dict:
    """The board changes of a monitor (:mod:`.changes`), JSON-safe, for its saved state."""
    return {
        "withdrawn": monitor.withdrawn,
        "voided": monitor.voided,
        "item_positions": monitor.item_positions,
        "skipped_voided": int(monitor._skipped_voided),
    }


def load_changes(monitor, meta: Mapping) -> None:
    """Set the board changes saved by :func:`changes_meta` (absent in files written before
    them, whose monitors had none)."""
    monitor.withdrawn = dict(meta.get("withdrawn", {}))
    monitor.voided = dict(meta.get("voided", {}))
    monitor.item_positions = {k: list(v) for k, v in meta.get("item_positions", {}).items()}
    monitor._skipped_voided = int(meta.get("skipped_voided", 0))


def loaded(name: str, saved, like: np.ndarray, what: str) -> np.ndarray:
    """A saved array as the dtype and shape of ``like``, or an error naming the file."""
    saved = np.asarray(saved)
    if saved.shape != like.shape:
        raise ValueError(
            f"{name!r}: the saved {what} has shape {saved.shape}, not {like.shape}: the file is "
            "damaged"
        )
    return saved.astype(like.dtype, copy=True)


def save_monitor(monitor, path: str | os.PathLike) -> None:
    """Write a monitor's whole state to one ``.npz`` file, atomically.

    The configuration and history go in as JSON, the wealths, certifier and monitor arrays as
    arrays; the file is written beside ``path``, flushed to disk and renamed into place.

    Parameters
    ----------
    monitor : Monitor
        The monitor to save.
    path : str or os.PathLike
        Destination file.

    Returns
    -------
    None

    References
    ----------
    NumPy Enhancement Proposal 1 (NEP 1): A simple file format for NumPy arrays (the ``.npy`` /
    ``.npz`` format, read with ``allow_pickle=False``).
    Python documentation, :func:`os.replace` (atomic rename on POSIX).

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from rankci.sequential import Monitor
    >>> mon = Monitor(["a", "b", "c"], sampling="iid")
    >>> mon.update_block(np.random.default_rng(0).random((50, 3)) < [0.8, 0.5, 0.2])
    50
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "monitor.npz")
    ...     save_monitor(mon, path)
    ...     again = restore_monitor(Monitor, path)
    >>> again.t, again.models == mon.models
    (50, True)
    >>> bool(np.array_equal(again.log_wealth(), mon.log_wealth(), equal_nan=True))
    True
    """
    monitor._flush()
    wealth = monitor._wealth.state()
    config = {"format": FORMAT, "models": list(monitor.models), "spec": monitor.spec.to_dict()}
    meta = {
        "config": config,
        "evaluations": int(monitor.evaluations),
        "looks": monitor.looks,
        "retired": monitor.retired,
        "excluded_items": int(monitor._excluded_items),
        "warned_exclusion": monitor._warned_exclusion,
        "alpha_event": monitor.alpha_event,
        "ranking_looks": monitor._ranking_looks,  # the look count an eager ranking recorded
        **changes_meta(monitor),
    }
    arrays = {
        "sum": monitor._sum,
        "dominance": monitor._dominance,
        "missing_by_model": monitor._missing_by_model,
    }
    arrays.update({f"wealth.{k}": v for k, v in wealth["arrays"].items()})
    arrays.update({f"certifier.{k}": v for k, v in monitor._certifier.state().items()})
    write_state(path, meta, arrays)


def restore_monitor(cls, path: str | os.PathLike):
    """A monitor in exactly the state written by :func:`save_monitor`.

    Parameters
    ----------
    cls : type
        The monitor class to build (:class:`~rankci.sequential.Monitor`).
    path : str or os.PathLike
        A file written by :func:`save_monitor`.

    Returns
    -------
    Monitor

    Raises
    ------
    ValueError
        Naming the file: not a saved rankci monitor, damaged, of another kind (an open-entry
        or arena monitor: :data:`KINDS` names the class that restores it) or of a format this
        version does not read (:func:`read_state`).

    References
    ----------
    NumPy Enhancement Proposal 1 (NEP 1): A simple file format for NumPy arrays (the ``.npy`` /
    ``.npz`` format, read with ``allow_pickle=False``).
    Python documentation, :func:`os.replace` (atomic rename on POSIX).

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from rankci.sequential import Monitor
    >>> mon = Monitor(["a", "b", "c"], sampling="iid")
    >>> mon.update_block(np.random.default_rng(0).random((50, 3)) < [0.8, 0.5, 0.2])
    50
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "monitor.npz")
    ...     save_monitor(mon, path)
    ...     again = restore_monitor(Monitor, path)
    >>> again.t, again.models == mon.models
    (50, True)
    >>> bool(np.array_equal(again.log_wealth(), mon.log_wealth(), equal_nan=True))
    True
    """
    name = os.fspath(path)
    form, meta, arrays = read_state(name, FORMAT, *OLD_FORMATS)
    try:
        return _restored(cls, name, form, meta, arrays)
    except (KeyError, TypeError) as error:
        raise ValueError(
            f"{name!r}: the saved monitor is incomplete ({error!r}): damaged"
        ) from None


def _restored(cls, name: str, form: str, meta: dict, arrays: dict):
    config = dict(meta["config"])
    config.pop("format")
    if form == FORMAT:
        spec = spec_of(name, config["spec"])
    else:  # the settings themselves, at the top
        spec = spec_of(name, {k: v for k, v in config.items() if k != "models"})
    if spec.entry == "open":
        raise ValueError(f"{name!r}: the saved settings say entry='open'; the file is damaged")
    monitor = cls(config["models"], spec)
    monitor._wealth = PairWealth.from_state(
        {
            "config": monitor._wealth.state()["config"],
            "arrays": {k[7:]: v for k, v in arrays.items() if k.startswith("wealth.")},
        }
    )
    monitor._certifier.load_state(
        {k[10:]: v for k, v in arrays.items() if k.startswith("certifier.")}
    )
    monitor._sum = loaded(name, arrays["sum"], monitor._sum, "score sums")
    monitor._dominance = loaded(name, arrays["dominance"], monitor._dominance, "certified pairs")
    monitor._missing_by_model = loaded(
        name, arrays["missing_by_model"], monitor._missing_by_model, "missing counts"
    )
    monitor.evaluations = int(meta["evaluations"])
    monitor.looks = list(meta["looks"])
    monitor.retired = dict(meta["retired"])
    monitor._excluded_items = int(meta["excluded_items"])
    monitor._warned_exclusion = bool(meta["warned_exclusion"])
    monitor.alpha_event = meta.get("alpha_event")  # absent in files written before 0.2
    monitor._ranking_looks = meta.get("ranking_looks")  # absent in earlier files
    load_changes(monitor, meta)
    return monitor
