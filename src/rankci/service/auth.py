"""Board tokens: made with :mod:`secrets`, stored only as salted scrypt hashes.

A write token is created with each board (and a read token for a private board); the database
keeps ``scrypt$n$r$p$salt$hash`` only, so a copy of the database gives no way to write. Tokens are
256-bit random strings, so the hash resists guessing anyway; scrypt (RFC 7914) additionally makes
a leaked hash useless for checking guesses quickly. Checking a token costs one scrypt (tens of
milliseconds), so a verified token is remembered for the life of the process, keyed by a keyed
BLAKE2 digest (the token itself is never kept), and scrypt runs one at a time so that a flood of
wrong tokens costs at most one core.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading

__all__ = ["TokenCheck", "hash_token", "new_token", "verify_token"]

PREFIX = "rkci_"
N, R, P = 2**14, 8, 1
_scrypt_lock = threading.Lock()


def new_token() -> str:
    """A fresh token: ``rkci_`` and 43 URL-safe characters (256 random bits)."""
    return PREFIX + secrets.token_urlsafe(32)


def _scrypt(token: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    with _scrypt_lock:
        return hashlib.scrypt(token.encode(), salt=salt, n=n, r=r, p=p, dklen=32, maxmem=64 << 20)


def hash_token(token: str) -> str:
    salt = secrets.token_bytes(16)
    return f"scrypt${N}${R}${P}${salt.hex()}${_scrypt(token, salt, N, R, P).hex()}"


def verify_token(token: str, stored: str) -> bool:
    try:
        kind, n, r, p, salt, digest = stored.split("$")
        if kind != "scrypt":
            return False
        candidate = _scrypt(token, bytes.fromhex(salt), int(n), int(r), int(p))
    except ValueError:
        return False
    return hmac.compare_digest(candidate, bytes.fromhex(digest))


class TokenCheck:
    """Checks tokens against stored hashes, remembering the ones already verified."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)
        self._known: set[tuple[str, bytes]] = set()
        self._lock = threading.Lock()

    def check(self, token: str | None, stored: str | None) -> bool:
        if not token or not stored or not token.startswith(PREFIX) or len(token) > 200:
            return False
        mark = (stored, hashlib.blake2b(token.encode(), key=self._key, digest_size=32).digest())
        with self._lock:
            if mark in self._known:
                return True
        if not verify_token(token, stored):
            return False
        with self._lock:
            self._known.add(mark)
        return True
