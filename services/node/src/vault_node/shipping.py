"""The primary's side of replication (docs/design.md#replication-between-nodes): a write is
acknowledged only once every in-sync replica holds its commit, or the center has been
told that a replica missed it.

Shipping is serialised per vault, so replicas take commits in the order they were made;
a replica that answers with another head than expected is sent what it lacks from there.
In async mode the write is acknowledged first and shipped by a background worker.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import structlog

from vault_core import OpenVault, VaultError
from vault_node.config import NodeConfig
from vault_node.errors import FailingOverError
from vault_node.feed import reason_of
from vault_node.lease import Copy, Leases, Replica

log = structlog.get_logger("vault_node")

REPLICATION_PATH = "/replication"
OLD_HEAD, NEW_HEAD = "Secondbrain-Old-Head", "Secondbrain-New-Head"
PACK_TYPE = "application/x-git-packed-objects"
PUSHERS = ThreadPoolExecutor(max_workers=16, thread_name_prefix="ship")
_UNKNOWN = "?"
HAND_EDITS = "vault_scan: changes made on the primary's disk by hand"


class Replicator:
    """Gates writes on the lease and ships their commits; one per node."""

    def __init__(self, leases: Leases, config: Callable[[], NodeConfig]) -> None:
        self.leases = leases
        self.config = config
        self._heads: dict[tuple[str, str], str | None] = {}  # (vault, node) → its head
        self._epochs: dict[str, int] = {}  # vault → the epoch `_heads` holds for it
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._pending: dict[str, tuple[OpenVault, Copy, bool]] = {}
        self.shipped = {"ok": 0, "failed": 0}
        # One client for every push: a keep-alive connection per replica, and no TLS
        # context built per call.
        self.http = httpx.Client(limits=httpx.Limits(max_keepalive_connections=32))

    def close(self) -> None:
        self.http.close()

    def before_write(self, vault: str) -> Copy | None:
        """The primary's copy when the write may go ahead (None: nobody replicates it)."""
        return self.leases.check_write(vault)

    def after_write(self, opened: OpenVault, held: Copy) -> None:
        """Ship what the write committed; returns once it may be acknowledged. Raises
        FailingOverError when a replica missed it and the center could not be told, or the
        lease ran out meanwhile."""
        if held.mode == "async":
            self._later(opened, held)
            return
        self.ship(opened, held)
        if held.until is None or self.leases.clock() >= held.until:
            raise FailingOverError(opened.name, self.leases.retry_after(), "its lease ran out")

    def holding(self, vault: str, epoch: int) -> list[str]:
        """The replicas of `vault` whose head is known here at `epoch`: each holds every
        write acknowledged at that epoch, since every write is shipped to them before its
        ack (a failed push forgets the head, and the replica is reported out of sync before
        the ack) and a head is known only from a replica's own answer to a push."""
        with self._guard:
            if self._epochs.get(vault) != epoch:
                return []
        known = dict(self._heads)  # a copy: pushers change it from their threads
        return sorted(node for (name, node) in known if name == vault)

    def _at_epoch(self, vault: str, epoch: int) -> None:
        """Forget what was known of `vault`'s replicas at another epoch (this node may have
        been its primary before, when another copy's history may have replaced theirs)."""
        with self._guard:
            if self._epochs.get(vault) == epoch:
                return
            self._epochs[vault] = epoch
            for key in [key for key in list(self._heads) if key[0] == vault]:
                self._heads.pop(key, None)

    def catch_up(self) -> None:
        """Bring every replica this node ships to up to its head, in the background: a new
        one, one that restarted, one the center took out of sync (it counts as in sync
        again once its renewal reports the primary's head). Failures are only logged."""
        library = self.leases.library()
        for held in self.leases.primaries():
            opened = library.ready(held.vault)
            if opened is not None:
                self._later(opened, held, everyone=True)

    def ship(self, opened: OpenVault, held: Copy, *, everyone: bool = False) -> None:
        """Bring every in-sync replica to this copy's head and tell the center about each
        that fails (FailingOverError when it could not be told); `everyone`: every replica
        with a lease, failures only logged (a catch-up)."""
        if opened.git is None:
            return
        self._at_epoch(opened.name, held.epoch)
        # The center may count a lagging replica in sync before this node hears of it (at
        # the next renewal), so a write is shipped to every replica whose head is known
        # here (the catch-up after each renewal learns it) and reported as missed for each
        # other one before it is acknowledged (once per renewal: only a renewal can put
        # the replica back in sync).
        targets = [
            r
            for r in held.replicas
            if r.lease and (r.in_sync or everyone or (opened.name, r.node) in self._heads)
        ]
        missed = [] if everyone else [r.node for r in held.replicas if r not in targets]
        if targets:
            with self._lock_of(opened.name):
                head = opened.git.head()
                if head is None:
                    return
                results = list(PUSHERS.map(lambda r: self._push(opened, r, head), targets))
            for replica, ok in zip(targets, results, strict=True):
                self.shipped["ok" if ok else "failed"] += 1
                if not ok and not everyone:
                    missed.append(replica.node)
        for node in missed:
            if self.leases.still_out_of_sync(opened.name, held.epoch, node):
                continue
            if not self.leases.out_of_sync(opened.name, held.epoch, node):
                raise FailingOverError(
                    opened.name, self.leases.retry_after(), f"replica {node} missed it"
                )

    def _lock_of(self, vault: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(vault, threading.Lock())

    def _push(self, opened: OpenVault, replica: Replica, head: str) -> bool:
        key = (opened.name, replica.node)
        known = self._heads.get(key, _UNKNOWN)
        if known == head:
            return True
        old = _parent(opened, head) if known == _UNKNOWN else known
        for _attempt in range(2):
            answer = self._post(opened, replica, old, head)
            if answer is None:
                break
            status, theirs = answer
            self._heads[key] = theirs if status == 409 else head
            if status == 200:
                return True
            if status != 409 or theirs == old:
                break
            old = theirs
        self._heads.pop(key, None)
        return False

    def _post(
        self, opened: OpenVault, replica: Replica, old: str | None, head: str
    ) -> tuple[int, str | None] | None:
        """One push: (200, head) taken, (409, its head) on another head, None otherwise."""
        assert opened.git is not None
        assert replica.lease is not None
        try:
            _new, pack = opened.git.pack_since(old)
        except VaultError as exc:
            log.warning("replication_pack_failed", vault=opened.name, error=exc.code)
            return None
        headers = {
            "Authorization": f"Bearer {replica.lease}",
            "Content-Type": PACK_TYPE,
            OLD_HEAD: old or "",
            NEW_HEAD: head,
        }
        url = f"{replica.resource.removesuffix('/mcp')}{REPLICATION_PATH}/{opened.name}"
        try:
            response = self.http.post(
                url,
                content=pack,
                headers=headers,
                timeout=self.config().durations.replication_timeout,
            )
        except httpx.HTTPError as exc:
            log.warning(
                "replication_failed", vault=opened.name, replica=replica.node, error=reason_of(exc)
            )
            return None
        theirs = _head_in(response)
        if response.status_code in {200, 409} and (response.status_code == 409 or theirs == head):
            return response.status_code, theirs
        log.warning(
            "replication_refused",
            vault=opened.name,
            replica=replica.node,
            status=response.status_code,
            reason=_reason_in(response),
        )
        return None

    def _later(self, opened: OpenVault, held: Copy, *, everyone: bool = False) -> None:
        """Ship on a worker (async mode, catch-up); requests made meanwhile fold into one."""
        with self._guard:
            busy = opened.name in self._pending
            self._pending[opened.name] = (opened, held, everyone)
        if not busy:
            PUSHERS.submit(self._drain, opened.name)

    def _drain(self, vault: str) -> None:
        while True:
            with self._guard:
                job = self._pending.get(vault)
            if job is None:
                return
            opened, held, everyone = job
            try:
                if everyone:
                    self._commit_hand_edits(opened, held)
                self.ship(opened, held, everyone=everyone)
            except FailingOverError:
                log.warning("replication_async_behind", vault=vault)
            with self._guard:
                if self._pending.get(vault) is job:
                    del self._pending[vault]
                    return

    def _commit_hand_edits(self, opened: OpenVault, held: Copy) -> None:
        """Commit what was changed on this primary's disk by hand (Obsidian) so it ships
        like any write: only while the lease is valid, found by size and mtime as git's
        status does (a clean file is not read)."""
        if opened.git is None or held.until is None or self.leases.clock() >= held.until:
            return
        files = ((entry.rel, entry.size, entry.mtime_ns) for entry in opened.vault.walk())
        try:
            with opened.vault.lock:
                sha = opened.git.commit_uncommitted(files, HAND_EDITS)
        except VaultError as exc:
            log.warning("hand_edits_not_committed", vault=opened.name, error=exc.code)
            return
        if sha is not None:
            log.info("hand_edits_committed", vault=opened.name, commit=sha[:12])

    def wait_idle(self, vault: str, timeout: float) -> bool:
        """True once no async shipment of `vault` is queued (tests, shutdown)."""
        done = threading.Event()
        deadline = self.leases.clock() + timeout
        while self.leases.clock() < deadline:
            with self._guard:
                if vault not in self._pending:
                    return True
            done.wait(0.01)
        return False


def _parent(opened: OpenVault, head: str) -> str | None:
    """The first parent of `head`: what an in-sync replica holds before the newest commit."""
    assert opened.git is not None
    history = opened.git.parents(head)
    return history[0] if history else None


def _head_in(response: httpx.Response) -> str | None:
    try:
        head = response.json().get("head")
    except (ValueError, AttributeError):
        return None
    return head if isinstance(head, str) else None


def _reason_in(response: httpx.Response) -> str | None:
    try:
        reason = response.json()["error"]["reason"]
    except (ValueError, KeyError, TypeError):
        return None
    return reason[:64] if isinstance(reason, str) else None
