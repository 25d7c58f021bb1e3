"""Saving and restoring a :class:`~rankci.sequential.Monitor` (crash-safe evaluations).

One ``.npz`` file (no pickles) holds the configuration and history as JSON plus every array of
the wealths, the certifier and the monitor, written to a temporary file and renamed into place, so
a crash while saving leaves the previous state intact. Restoring rebuilds the monitor from its
configuration and loads the arrays bit for bit: feeding the same items afterwards gives exactly
what an uninterrupted monitor gives.

The configuration records the models and the monitor's :class:`~rankci.sequential.spec.MonitorSpec`
(``{"format": "rankci-monitor-2", "models": [...], "spec": spec.to_dict()}``). Files of the first
format (``rankci-monitor-1``, written before the spec existed) held the settings at the top of the
configuration; they load too, their spec rebuilt from those settings.
"""

from __future__ import annotations

import io
import json
import os

import numpy as np

from rankci.sequential.spec import MonitorSpec
from rankci.sequential.wealth import PairWealth

__all__ = ["FORMAT", "OLD_FORMATS", "restore_monitor", "save_monitor"]

FORMAT = "rankci-monitor-2"
#: Earlier formats that still load: the settings at the top of the configuration.
OLD_FORMATS = ("rankci-monitor-1",)


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
        "withdrawn": monitor.withdrawn,
        "voided": monitor.voided,
        "item_positions": monitor.item_positions,
        "skipped_voided": int(monitor._skipped_voided),
    }
    arrays = {
        "meta": np.array(json.dumps(meta)),
        "sum": monitor._sum,
        "dominance": monitor._dominance,
        "missing_by_model": monitor._missing_by_model,
    }
    arrays.update({f"wealth.{k}": v for k, v in wealth["arrays"].items()})
    arrays.update({f"certifier.{k}": v for k, v in monitor._certifier.state().items()})
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    path = os.fspath(path)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as handle:
        handle.write(buffer.getvalue())
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


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
        If the file is not a saved rankci monitor.

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
    try:
        with np.load(name, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
    except (OSError, ValueError) as error:
        raise ValueError(f"{name!r} is not a saved rankci monitor: {error}") from None
    if "meta" not in arrays:
        raise ValueError(f"{name!r} is not a saved rankci monitor")
    meta = json.loads(str(arrays["meta"]))
    config = dict(meta["config"])
    form = config.pop("format", None)
    if form == FORMAT:
        spec = MonitorSpec.from_dict(config["spec"])
    elif form in OLD_FORMATS:  # the settings themselves, at the top
        spec = MonitorSpec.from_dict({k: v for k, v in config.items() if k != "models"})
    else:
        raise ValueError(f"{name!r} is not a saved rankci monitor ({FORMAT})")
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
    monitor._sum = np.array(arrays["sum"], dtype=float)
    monitor._dominance = np.array(arrays["dominance"], dtype=bool)
    monitor._missing_by_model = np.array(arrays["missing_by_model"], dtype=np.int64)
    monitor.evaluations = int(meta["evaluations"])
    monitor.looks = list(meta["looks"])
    monitor.retired = dict(meta["retired"])
    monitor._excluded_items = int(meta["excluded_items"])
    monitor._warned_exclusion = bool(meta["warned_exclusion"])
    monitor.alpha_event = meta.get("alpha_event")  # absent in files written before 0.2
    # board changes (withdrawals, voids, named items): absent in files written before them,
    # whose monitors had none
    monitor.withdrawn = dict(meta.get("withdrawn", {}))
    monitor.voided = dict(meta.get("voided", {}))
    monitor.item_positions = {k: list(v) for k, v in meta.get("item_positions", {}).items()}
    monitor._skipped_voided = int(meta.get("skipped_voided", 0))
    return monitor
