"""Routes of the server's operator: health, and the acts that always need the admin token
(deleting a board, rotating or revoking its tokens).

The admin token (``RANKCI_ADMIN_TOKEN``) is checked by :func:`rankci.service.deps.admin`, a
dependency solved before the route runs.
"""

from __future__ import annotations

import os
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path

from rankci._version import __version__
from rankci.service.deps import Context, admin

__all__ = ["router"]

router = APIRouter()
Which = Annotated[Literal["write", "read"], Path()]


@router.get("/api/health", tags=["service"])
def health(context: Context) -> dict:
    """``ok``, or ``degraded`` when the database cannot be written, failed its integrity
    check, or a board is quarantined."""
    service, storage = context.service, context.storage
    database = storage.health()
    ok = database["writable"] and database["integrity"] in ("ok", "not applicable")
    return {
        "status": "ok" if ok and not service.quarantined else "degraded",
        "version": __version__,
        "storage": storage.kind,
        "pid": os.getpid(),
        "database": database,
        "boards": {
            "warmed": service.warmed,
            "n_loaded": len(service.loaded()),
            "loaded": service.public_loaded(),
            "n_quarantined": len(service.quarantined),
            "quarantined": service.public_quarantined(),
        },
    }


@router.delete(
    "/api/boards/{board}",
    tags=["boards"],
    summary="Delete a board and all its scores (admin token)",
    dependencies=[Depends(admin("deleting boards"))],
)
def delete_board(board: str, context: Context) -> dict:
    context.service.delete(board)
    return {"deleted": board}


@router.post(
    "/api/boards/{board}/tokens/{which}",
    tags=["boards"],
    summary="Rotate a board's write or read token: a new one, the old stops working (admin)",
    dependencies=[Depends(admin("rotating tokens"))],
)
def rotate_token(board: str, which: Which, context: Context) -> dict:
    return {"board": board, "which": which, "token": context.service.set_token(board, which)}


@router.delete(
    "/api/boards/{board}/tokens/{which}",
    tags=["boards"],
    summary="Revoke a board's write or read token (admin token)",
    dependencies=[Depends(admin("revoking tokens"))],
)
def revoke_token(board: str, which: Which, context: Context) -> dict:
    context.service.set_token(board, which, revoke=True)
    return {"board": board, "which": which, "revoked": True}
