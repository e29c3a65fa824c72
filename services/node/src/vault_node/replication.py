"""The replica's side of replication (docs/design.md#replication-between-nodes):
`POST /replication/{vault}` takes a git pack from the vault's primary.

The caller proves it is the primary with the lease the center signed for this node (`aud`
this node's resource); no other trust between nodes. The replica refuses a lease older
than the newest epoch it saw (saved in the vault before anything is applied, so a restart
keeps it), an old head that is not its own (answering its head), a non-fast-forward and
anything that is not a pack; it applies objects, ref, files and index before it answers.
"""

from __future__ import annotations

import re
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import structlog
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from tickets import TokenError
from tickets.leases import Lease, verify_lease
from vault_core import (
    VAULT_NAME,
    Library,
    NotFoundError,
    OpenVault,
    ReplicationRefusedError,
    VaultError,
    copies,
)
from vault_node.auth import bearer
from vault_node.errors import AuthFailure
from vault_node.shipping import NEW_HEAD, OLD_HEAD, REPLICATION_PATH

if TYPE_CHECKING:
    from vault_node.app import Node

log = structlog.get_logger("vault_node")

router = APIRouter()
OPEN_WAIT = 10.0
"""Seconds a push waits for a replica vault it has just created to open."""
_SHA = re.compile(r"[0-9a-f]{40}")


@router.post(REPLICATION_PATH + "/{vault}", include_in_schema=False)
async def receive(vault: str, request: Request) -> JSONResponse:
    """Take a pack moving this replica from the `Secondbrain-Old-Head` to the
    `Secondbrain-New-Head` commit; 200 with the new head, or the one error body."""
    node: Node = request.app.state.node
    config = node.config
    try:
        lease = await run_in_threadpool(_verified, node, bearer(request))
    except AuthFailure as exc:
        log.info("replication_unauthorized", reason=exc.reason)
        return _refused(401, "unauthorized", "a lease the center signed for this node is required")
    old, new = request.headers.get(OLD_HEAD, ""), request.headers.get(NEW_HEAD, "")
    if lease.vault != vault or not VAULT_NAME.fullmatch(vault):
        return _refused(403, "forbidden", "the lease is for another vault")
    if (old and not _SHA.fullmatch(old)) or not _SHA.fullmatch(new):
        return _refused(400, "invalid_argument", f"{OLD_HEAD} and {NEW_HEAD} must be full shas")
    body = await _body(request, config.replication_max_bytes)
    if body is None:
        return _refused(
            413, "payload_too_large", f"a pack over {config.replication_max_bytes} bytes"
        )
    try:
        head = await run_in_threadpool(apply, node, lease, old or None, new, body)
    except ReplicationRefusedError as exc:
        status = 409 if exc.reason in CONFLICTS else 422
        log.info("replication_refused", vault=vault, reason=exc.reason, epoch=lease.epoch)
        return _refused(status, exc.code, exc.message, reason=exc.reason, head=exc.head)
    except VaultError as exc:
        log.warning("replication_failed", vault=vault, error=exc.code)
        return _refused(503, exc.code, exc.message)
    return JSONResponse({"head": head})


def _verified(node: Node, token: str) -> Lease:
    """The lease, checked with the keys the node verifies tokens with (fetched again once
    when it names a key not yet known, as a token would)."""
    verifier = node.verifier
    for attempt in range(2):
        try:
            return verify_lease(
                token, verifier.keys, issuer=verifier.issuer, audience=node.config.resource
            )
        except TokenError as exc:
            fresh = verifier.refresh() if attempt == 0 and verifier.refresh is not None else None
            if exc.reason != "unknown_kid" or fresh is None:
                raise AuthFailure(exc.reason) from exc
            verifier.keys = fresh
    raise AuthFailure("unknown_kid")


CONFLICTS = frozenset({"head_mismatch", "stale_epoch", "primary_here", "own_vault"})
"""Refusals about this copy's state (409), not about the pack sent (422)."""


def apply(node: Node, lease: Lease, old: str | None, new: str, pack: bytes) -> str:
    """Fence by epoch, record it, then take the pack under the vault's write lock; the new
    head. ReplicationRefusedError says why not."""
    opened = _replica_vault(node, lease)
    git = opened.git
    if git is None:
        raise ReplicationRefusedError("versioning_off", "this copy has no git history")
    with opened.vault.lock:
        held = node.leases.get(lease.vault) if node.leases is not None else None
        if held is not None and held.role == "primary" and held.epoch >= lease.epoch:
            raise ReplicationRefusedError(
                "primary_here", f"this node is the primary at epoch {held.epoch}", git.head()
            )
        state = _record(opened, lease)
        if node.leases is not None:
            node.leases.demote(lease.vault, lease.epoch, lease.sub)
        # Commits written under an older epoch than this primary's may be ones it lacks
        # (async mode, or a cut-off primary): they are kept on a branch, never dropped.
        recovery = _recovery_name(state.head_epoch) if lease.epoch > state.head_epoch else None
        applied = git.receive(old, new, pack, recovery)
        if state.head_epoch != lease.epoch:
            copies.save(opened.vault.root, replace(state, head_epoch=lease.epoch))
        if applied.paths:
            opened.index.update_paths(applied.paths)
    if applied.recovery is not None and old is not None:
        log.warning("replica_recovery_branch", vault=lease.vault, branch=applied.recovery, head=old)
        if node.leases is not None:
            node.leases.report_recovery(lease.vault, applied.recovery, old)
    log.info("replication_applied", vault=lease.vault, epoch=lease.epoch, files=len(applied.paths))
    return applied.head


def _recovery_name(epoch: int) -> str:
    return f"recovery/{epoch}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"


def _record(opened: OpenVault, lease: Lease) -> copies.CopyState:
    root = opened.vault.root
    state = copies.load(root)
    if not state.role and opened.git is not None and opened.git.head() is not None:
        raise ReplicationRefusedError(
            "own_vault",
            "this node holds a vault of that name of its own, not a copy of the primary's",
            opened.git.head(),
        )
    if lease.epoch < state.epoch:
        raise ReplicationRefusedError(
            "stale_epoch",
            f"epoch {lease.epoch} is older than {state.epoch}",
            opened.git.head() if opened.git else None,
        )
    wanted = copies.CopyState("replica", lease.epoch, lease.sub, state.head_epoch)
    if wanted != state:
        copies.save(root, wanted)
    return wanted


def _replica_vault(node: Node, lease: Lease) -> OpenVault:
    """The vault to apply to; one this node does not hold yet is made as an empty replica."""
    library = node.library
    try:
        return library.get(lease.vault)
    except NotFoundError:
        pass
    except VaultError:
        return _wait_open(library, lease.vault)
    root = library.data_dir / lease.vault
    root.mkdir(exist_ok=True)
    copies.save(root, copies.CopyState("replica", lease.epoch, lease.sub))
    log.info("replica_vault_created", vault=lease.vault, epoch=lease.epoch)
    return _wait_open(library, lease.vault)


def _wait_open(library: Library, vault: str) -> OpenVault:
    deadline = time.monotonic() + OPEN_WAIT
    while True:
        try:
            opened: OpenVault = library.get(vault)
        except VaultError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.05)
            continue
        return opened


async def _body(request: Request, limit: int) -> bytes | None:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks, total = [], 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _refused(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    error = {"code": code, "message": message}
    if "reason" in extra:
        error["reason"] = extra["reason"]
    body: dict[str, Any] = {"error": error}
    if "head" in extra:
        body["head"] = extra["head"]
    return JSONResponse(body, status_code=status)
