"""Board tokens: made with :mod:`secrets`, stored only as keyed hashes; failed checks rate-limited.

A write token is created with each board (and a read token for a private board); the database
keeps ``hmac-sha256$<hex>`` only: HMAC-SHA-256 of the token under a server secret (32 random
bytes, kept in the database's ``meta`` table). Tokens are 256-bit random strings, so a slow
password hash adds nothing against guessing, and the keyed fast hash costs about a microsecond:
checking a token never blocks another request, whatever the rate of wrong tokens. The comparison
is constant-time (:func:`hmac.compare_digest`).

Databases made by earlier versions hold ``scrypt$n$r$p$salt$hash``: such a token is still
accepted (one scrypt run, at most two at a time, never waiting for a slot: a busy check answers
"try again"), and its stored hash is replaced by the HMAC form on the first successful check, so
each old token costs scrypt once.

:class:`FailureLimit` counts failed authentications per (credential tried, client address) and
per address: over ``limit`` failures in ``window`` seconds, further *failures* are answered 429
with ``Retry-After``; a valid token is never refused for someone else's wrong ones.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict, deque

__all__ = [
    "REVOKED",
    "Busy",
    "FailureLimit",
    "TokenCheck",
    "hash_token",
    "new_token",
    "verify_token",
]

PREFIX = "rkci_"
HMAC_KIND = "hmac-sha256"
REVOKED = "revoked"
MAX_TOKEN = 200
_legacy_slots = threading.BoundedSemaphore(2)


class Busy(Exception):
    """A legacy (scrypt) check could not run now; the caller answers 503 with Retry-After."""


def new_token() -> str:
    """A fresh token: ``rkci_`` and 43 URL-safe characters (256 random bits).

    Parameters
    ----------
    None

    Returns
    -------
    str
        ``"rkci_" + secrets.token_urlsafe(32)``.

    References
    ----------
    Python documentation, :func:`secrets.token_urlsafe`.
    Josefsson, S. (2006). The Base16, Base32, and Base64 Data Encodings. RFC 4648, Section 5
    (base64url).

    Examples
    --------
    >>> import base64
    >>> token = new_token()
    >>> token.startswith("rkci_"), len(token)
    (True, 48)
    >>> len(base64.urlsafe_b64decode(token[5:] + "="))  # 32 random bytes
    32
    """
    return PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str, key: bytes) -> str:
    """``hmac-sha256$<hex>``: the token's HMAC-SHA-256 under the server secret ``key``.

    Parameters
    ----------
    token : str
        The token.
    key : bytes
        The server secret.

    Returns
    -------
    str
        The stored form of the token.

    References
    ----------
    Krawczyk, H., Bellare, M. and Canetti, R. (1997). HMAC: Keyed-Hashing for Message
    Authentication. RFC 2104.
    NIST (2015). Secure Hash Standard (SHS). FIPS PUB 180-4 (SHA-256).

    Examples
    --------
    >>> import hashlib, hmac
    >>> key = bytes(32)
    >>> stored = hash_token("rkci_example", key)
    >>> stored.startswith("hmac-sha256$"), len(stored)
    (True, 76)
    >>> stored == "hmac-sha256$" + hmac.new(key, b"rkci_example", hashlib.sha256).hexdigest()
    True
    """
    return f"{HMAC_KIND}${hmac.new(key, token.encode(), hashlib.sha256).hexdigest()}"


def _legacy_scrypt(token: str, stored: str) -> bool:
    kind, n, r, p, salt, digest = stored.split("$")
    if not _legacy_slots.acquire(blocking=False):
        raise Busy("token check busy")
    try:
        candidate = hashlib.scrypt(
            token.encode(),
            salt=bytes.fromhex(salt),
            n=int(n),
            r=int(r),
            p=int(p),
            dklen=32,
            maxmem=64 << 20,
        )
    finally:
        _legacy_slots.release()
    return hmac.compare_digest(candidate, bytes.fromhex(digest))


def verify_token(token: str, stored: str, key: bytes) -> bool:
    """Whether ``token`` matches ``stored`` (HMAC form, or the legacy scrypt form).

    The HMAC form is compared in constant time (:func:`hmac.compare_digest`); a legacy
    ``scrypt$n$r$p$salt$hash`` runs scrypt once (raising :class:`Busy` when no slot is free);
    ``"revoked"`` or anything unknown never matches.

    Parameters
    ----------
    token : str
        The token presented.
    stored : str
        The stored hash.
    key : bytes
        The server secret.

    Returns
    -------
    bool

    References
    ----------
    Krawczyk, H., Bellare, M. and Canetti, R. (1997). HMAC: Keyed-Hashing for Message
    Authentication. RFC 2104.
    Percival, C. and Josefsson, S. (2016). The scrypt Password-Based Key Derivation Function.
    RFC 7914.

    Examples
    --------
    >>> import hashlib
    >>> key = bytes(32)
    >>> stored = hash_token("rkci_example", key)
    >>> verify_token("rkci_example", stored, key), verify_token("rkci_other", stored, key)
    (True, False)
    >>> verify_token("rkci_example", "revoked", key)
    False
    >>> salt = bytes(16)
    >>> digest = hashlib.scrypt(b"rkci_example", salt=salt, n=16, r=8, p=1, dklen=32).hex()
    >>> verify_token("rkci_example", f"scrypt$16$8$1${salt.hex()}${digest}", key)
    True
    """
    try:
        if stored.startswith(HMAC_KIND + "$"):
            return hmac.compare_digest(hash_token(token, key).encode(), stored.encode())
        if stored.startswith("scrypt$"):
            return _legacy_scrypt(token, stored)
    except ValueError:
        return False
    return False  # "revoked" or anything unknown


class TokenCheck:
    """Checks tokens against stored hashes under the server secret ``key``."""

    def __init__(self, key: bytes) -> None:
        self.key = key

    def hash(self, token: str) -> str:
        return hash_token(token, self.key)

    def check(self, token: str | None, stored: str | None) -> bool:
        if not token or not stored or not token.startswith(PREFIX) or len(token) > MAX_TOKEN:
            return False
        return verify_token(token, stored, self.key)

    @staticmethod
    def is_legacy(stored: str | None) -> bool:
        return bool(stored) and stored.startswith("scrypt$")


class FailureLimit:
    """At most ``limit`` failed authentications in ``window`` seconds, counted per (credential
    tried, client address) and per client address.

    A failure is recorded under both keys. :meth:`fail` answers "wait" when either is over the
    limit, so a client trying many wrong tokens is refused, but only its *failures* are: a
    request whose token is valid never fails, so it is never refused because of someone else's
    wrong tokens from the same address (a NAT, a proxy). :meth:`blocked`, the gate before any
    work, looks at the (credential, address) key only: the same wrong token retried is refused
    at once, a valid token never. The credential is kept as a SHA-256 fingerprint, never in the
    clear. The table is bounded (``max_clients`` keys, least recently failing dropped first),
    so a flood from many addresses cannot grow it without bound.
    """

    def __init__(self, limit: int = 20, window: float = 60.0, max_clients: int = 10_000) -> None:
        self.limit = limit
        self.window = window
        self.max_clients = max_clients
        self._failures: OrderedDict[tuple, deque] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(client: str, credential: str | None) -> tuple:
        """The (address, credential fingerprint) key; ``credential`` None: no token given."""
        if credential is None:
            return (client, "")
        return (client, hashlib.sha256(credential.encode("utf-8", "replace")).hexdigest()[:32])

    def _recent(self, key: tuple, now: float) -> deque:
        times = self._failures.get(key)
        if times is None:
            times = self._failures[key] = deque()
            while len(self._failures) > self.max_clients:
                self._failures.popitem(last=False)
        while times and times[0] <= now - self.window:
            times.popleft()
        return times

    def _wait(self, times: deque, now: float) -> float | None:
        if len(times) <= self.limit:
            return None
        return max(1.0, times[-self.limit - 1] + self.window - now)

    def blocked(self, client: str, credential: str | None = None) -> float | None:
        """The seconds to wait if ``credential`` from ``client`` is over the limit now (nothing
        is recorded)."""
        now = time.monotonic()
        key = self.key(client, credential)
        with self._lock:
            times = self._failures.get(key)
            if times is None or len(times) <= self.limit:
                return None
            while times and times[0] <= now - self.window:
                times.popleft()
            return self._wait(times, now)

    def fail(self, client: str, credential: str | None = None) -> float | None:
        """Record a failure; returns the seconds to wait when the credential from this
        address, or this address, is over the limit."""
        now = time.monotonic()
        waits = []
        with self._lock:
            for key in {self.key(client, credential), (client, None)}:
                times = self._recent(key, now)
                times.append(now)
                self._failures.move_to_end(key)
                waits.append(self._wait(times, now))
        waits = [w for w in waits if w is not None]
        return max(waits) if waits else None
