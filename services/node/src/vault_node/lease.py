"""Lease keeping (docs/design.md#replication-between-nodes): which copy of each replicated
vault this node holds, and whether a write may be acknowledged now.

Every `renew` seconds the node posts its copies to the center and learns per vault its
role and epoch. A primary acknowledges a write only while its lease is surely valid:
until the moment it *sent* its last successful renewal plus the lease's ttl minus
`lease_margin`, on the monotonic clock. A failed renewal changes nothing, so writes stop
on their own before the lease can have run out at the center.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import anyio
import httpx
import structlog
from starlette.concurrency import run_in_threadpool

from vault_core import VAULT_NAME, Library, copies
from vault_node.config import NodeConfig
from vault_node.errors import FailingOverError, NotPrimaryError
from vault_node.feed import FETCH_TIMEOUT, reason_of

log = structlog.get_logger("vault_node")

LEASES_PATH = "/v1/nodes/leases"
OUT_OF_SYNC_PATH = "/v1/nodes/replicas/out-of-sync"
DEFAULT_RENEW = 3.0
"""Seconds between renewals until the center's first answer names its own `renew`."""
RETRY_FIRST = 0.5
"""Seconds before a failed renewal is tried again the first time (then doubling)."""
MAX_TTL = 3600


@dataclass(frozen=True)
class Peer:
    """Another node holding a copy: its id and resource URL."""

    node: str
    resource: str


@dataclass(frozen=True)
class Replica:
    """A replica as the primary sees it, with the lease that lets it ship there."""

    node: str
    resource: str
    in_sync: bool
    lease: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Copy:
    """What this node holds of one replicated vault; `until` is the monotonic moment the
    primary stops acknowledging writes (None: not known to be valid at all)."""

    vault: str
    role: Literal["primary", "replica"]
    epoch: int
    mode: Literal["sync", "async"] = "sync"
    primary: Peer = Peer("", "")
    replicas: tuple[Replica, ...] = ()
    until: float | None = None
    expires: int | None = None
    """The lease's expiry as the center last answered it (Unix ms, the center's clock)."""


class Leases:
    """The copies this node holds and the lease behind each. Thread-safe.

    Without a center (embedded, `make run` without one) nothing is ever gated. A vault
    the center never named is not replicated: writes go on as before. A vault whose disk
    says it is replicated is gated from the start until a renewal says otherwise, so a
    restarted primary cannot acknowledge a write on a lease it no longer holds."""

    def __init__(
        self,
        config: Callable[[], NodeConfig],
        library: Callable[[], Library],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.library = library
        self.clock = clock
        self.renew = DEFAULT_RENEW
        self.last_ok: float | None = None
        self.recovered: list[dict[str, str]] = []
        self.on_renewed: Callable[[], None] | None = None
        """Called after each successful renewal (the replicator's catch-up)."""
        self.holding: Callable[[str, int], list[str]] | None = None
        """The replicas known to hold every write of a vault acknowledged at an epoch, which
        every write is shipped to before its ack (the replicator's): a primary names them
        in its renewal."""
        self._copies: dict[str, Copy] = {}
        self._lock = threading.Lock()
        self._renewing = threading.Lock()  # one renewal at a time: answers apply in order
        # Renewals and out-of-sync reports reach the center one at a time, in the order
        # they were made: a renewal sent before a report is never taken after it.
        self._center = threading.Lock()
        self._renewals = 0
        self._reported: dict[tuple[str, int, str], int] = {}

    def get(self, vault: str) -> Copy | None:
        """The copy of `vault` this node holds, from memory or (after a restart) its disk."""
        with self._lock:
            known = self._copies.get(vault)
        if known is not None:
            return known
        opened = self.library().ready(vault)
        if opened is None:
            return None
        state = copies.load(opened.vault.root)
        if not state.role:
            return None
        held = Copy(vault, state.role, state.epoch, primary=Peer(state.primary, ""))
        with self._lock:
            return self._copies.setdefault(vault, held)

    def check_write(self, vault: str) -> Copy | None:
        """The primary's copy when a write may be acknowledged now, None for a vault nobody
        replicates; NotPrimaryError on a replica, FailingOverError when the lease is not
        surely valid."""
        held = self.get(vault)
        if held is None:
            return None
        if held.role == "replica":
            raise NotPrimaryError(vault, held.primary.node, held.primary.resource)
        if held.until is None:  # not renewed since start: replicas may exist
            raise FailingOverError(vault, self.retry_after(), "its lease is not renewed")
        if held.replicas and self.clock() >= held.until:
            raise FailingOverError(vault, self.retry_after(), "its lease is not renewed")
        # A primary whose last answer named no replica goes on past its lease: no copy can
        # be promoted behind its back (a replica added meanwhile is in sync only through
        # this primary's pushes), so a center out of reach does not stop its writes.
        return held

    def retry_after(self) -> int:
        """Seconds a refused writer should wait: about one renewal."""
        return max(1, math.ceil(self.renew))

    def primaries(self) -> list[Copy]:
        """The copies this node holds as primary."""
        with self._lock:
            return [held for held in self._copies.values() if held.role == "primary"]

    def demote(self, vault: str, epoch: int, primary: str) -> None:
        """A push from a primary at `epoch` reached this node: it holds a replica now."""
        with self._lock:
            known = self._copies.get(vault)
            if known is not None and (known.role, known.epoch) == ("replica", epoch):
                return  # the renewal said so already, with the primary's address
            self._copies[vault] = Copy(vault, "replica", epoch, primary=Peer(primary, ""))

    def body(self) -> dict[str, Any]:
        """The renewal's body: per held vault the newest epoch seen, the head and the
        number of commits in its history; for a primary, the replicas holding every write
        it acknowledged (made under the lock that orders renewals and out-of-sync
        reports, so a report of a write one of them misses afterwards comes after it)."""
        library = self.library()
        found = []
        for name in library.names():
            opened = library.ready(name)
            if opened is None:
                continue
            # The epoch saved with the vault: a copy the center named in an answer but this
            # node never took (its own vault of that name) reports 0, a name clash.
            head, commits = opened.git.counted() if opened.git is not None else (None, 0)
            report = {
                "vault": name,
                "epoch": copies.load(opened.vault.root).epoch,
                "head": head,
                "commits": commits,
            }
            with self._lock:
                held = self._copies.get(name)
            if held is not None and held.role == "primary" and head and self.holding:
                report["caught_up"] = self.holding(name, held.epoch)[:16]
            found.append(report)
        body: dict[str, Any] = {"copies": found}
        with self._lock:
            if self.recovered:
                body["recovered"] = list(self.recovered)
        return body

    def report_recovery(self, vault: str, branch: str, head: str) -> None:
        """Commits only this copy held went to `branch`: say so in the next renewals
        until one succeeds."""
        with self._lock:
            self.recovered.append({"vault": vault, "branch": branch, "head": head})

    def renew_once(self) -> bool:
        """One renewal; False (and one log line) when it failed, which changes nothing.
        Renewals never overlap (the loop's and one asked for at once)."""
        with self._renewing:
            return self._renew_once()

    def _renew_once(self) -> bool:
        config = self.config()
        headers = {"Authorization": f"Bearer {config.node_credential}"}
        with self._center:
            self._renewals += 1
            sent = self.clock()
            body = self.body()
            try:
                response = httpx.post(
                    f"{config.center_url}{LEASES_PATH}",
                    json=body,
                    headers=headers,
                    timeout=FETCH_TIMEOUT,
                )
            except httpx.HTTPError as exc:
                log.warning("lease_renew_failed", error=reason_of(exc))
                return False
        if response.status_code == 404:
            # A center without leases replicates nothing: ask again at the heartbeat's pace.
            if self.renew != config.durations.heartbeat_interval:
                log.info("leases_not_offered", hint="the center predates replication")
            self.renew = config.durations.heartbeat_interval
            return False
        if response.status_code != 200:
            log.warning("lease_renew_failed", status=response.status_code)
            return False
        try:
            self.apply(response.json(), sent, {copy["vault"] for copy in body["copies"]})
        except (ValueError, TypeError, KeyError) as exc:
            log.warning("lease_renew_failed", error=f"unreadable answer ({type(exc).__name__})")
            return False
        self.last_ok = self.clock()
        with self._lock:
            del self.recovered[: len(body.get("recovered", []))]
        if self.on_renewed is not None:
            self.on_renewed()
        return True

    def apply(self, answer: Any, sent: float, reported: set[str] | None = None) -> None:
        """Take a renewal's answer: for each vault its role, epoch and (for a primary) the
        moment writes stop, counted from `sent`; the role and epoch are saved to disk.

        A replica named for a vault this node holds but did not report (`reported`: it was
        still opening) waits for the next renewal: the center has not seen its head yet,
        and it may be a vault of that name of the node's own, never to be made a replica."""
        ttl = float(answer["ttl"])
        if not 0 < ttl <= MAX_TTL:
            raise ValueError("ttl out of range")
        self.renew = min(max(float(answer.get("renew", DEFAULT_RENEW)), 0.2), ttl)
        margin = self.config().durations.lease_margin
        fresh, named = {}, set()
        for raw in answer["vaults"]:
            held = _copy(raw, until=sent + ttl - margin)
            if held is None:
                continue
            named.add(held.vault)
            unseen = reported is not None and held.vault not in reported
            if unseen and held.role == "replica" and held.vault in self.library().names():
                continue
            fresh[held.vault] = held
        for held in fresh.values():
            self._save(held)
        for name in (reported or set()) - named:
            self._dropped(name)
        with self._lock:
            for name in set(self._copies) - named:
                del self._copies[name]  # no copy any more; one saved on disk is read again
            for name, held in fresh.items():
                known = self._copies.get(name)
                if known is None or held.epoch >= known.epoch:
                    self._copies[name] = _kept_deadline(held, known)

    def _dropped(self, vault: str) -> None:
        """The center names no copy of `vault` here any more (a move dropped it): a copy
        saved as primary is saved as a replica, so this node neither writes it nor answers
        for it as its primary; calls go to the primary the directory names."""
        opened = self.library().ready(vault)
        if opened is None:
            return
        state = copies.load(opened.vault.root)
        if state.role == "primary":
            copies.save(opened.vault.root, replace(state, role="replica", primary=""))
            log.info("copy_dropped", vault=vault, epoch=state.epoch)

    def _save(self, held: Copy) -> None:
        opened = self.library().ready(held.vault)
        if opened is None:
            return
        root = opened.vault.root
        state = copies.load(root)
        if held.epoch < state.epoch:
            log.warning("lease_epoch_older", vault=held.vault, epoch=held.epoch, seen=state.epoch)
            return
        head_epoch = held.epoch if held.role == "primary" else state.head_epoch
        wanted = copies.CopyState(held.role, held.epoch, held.primary.node, head_epoch)
        if wanted != state:
            copies.save(root, wanted)

    async def run(self) -> None:
        """Renew now, then every `renew` seconds (cancelled at shutdown). A failed renewal
        is tried again sooner, after RETRY_FIRST seconds doubling up to `renew` while it
        keeps failing: a center that is stopping, or a name that still leads to one, costs
        a primary a moment of its lease instead of a whole interval."""
        wait = RETRY_FIRST
        while True:
            if await run_in_threadpool(self.renew_once):
                wait = RETRY_FIRST
                await anyio.sleep(self.renew)
            else:
                await anyio.sleep(min(wait, self.renew))
                wait = min(wait * 2, self.renew)

    def out_of_sync(self, vault: str, epoch: int, node: str) -> bool:
        """Tell the center that replica `node` missed a commit; True only on its 200."""
        config = self.config()
        headers = {"Authorization": f"Bearer {config.node_credential}"}
        with self._center:
            try:
                response = httpx.post(
                    f"{config.center_url}{OUT_OF_SYNC_PATH}",
                    json={"vault": vault, "epoch": epoch, "node": node},
                    headers=headers,
                    timeout=FETCH_TIMEOUT,
                )
            except httpx.HTTPError as exc:
                log.warning("out_of_sync_failed", vault=vault, replica=node, error=reason_of(exc))
                return False
            if response.status_code != 200:
                log.warning(
                    "out_of_sync_failed", vault=vault, replica=node, status=response.status_code
                )
                return False
            self._reported[(vault, epoch, node)] = self._renewals
        log.warning("replica_out_of_sync", vault=vault, replica=node, epoch=epoch)
        return True

    def still_out_of_sync(self, vault: str, epoch: int, node: str) -> bool:
        """Whether the center surely still counts replica `node` out of sync: this node
        said so and has not renewed since. Only a renewal's fresh head can put a replica
        back in sync (docs/design.md#replication-and-failover)."""
        with self._center:
            return self._reported.get((vault, epoch, node)) == self._renewals


def _kept_deadline(held: Copy, known: Copy | None) -> Copy:
    """`held`, keeping the earlier deadline when the center did not extend the lease (the
    same expiry as before, as while a move lets it run out): a renewal that extended
    nothing must not move the moment writes stop."""
    unchanged = (
        known is not None
        and held.role == known.role == "primary"
        and held.epoch == known.epoch
        and held.expires is not None
        and held.expires == known.expires
    )
    return replace(held, until=known.until) if unchanged and known is not None else held


def _copy(raw: Any, *, until: float) -> Copy | None:
    vault, role, epoch = raw["vault"], raw["role"], raw["epoch"]
    valid = isinstance(vault, str) and VAULT_NAME.fullmatch(vault)
    if not valid or role not in {"primary", "replica"} or type(epoch) is not int or epoch < 0:
        log.warning("lease_entry_refused")
        return None
    primary = raw.get("primary") or {}
    replicas = tuple(
        Replica(str(r["node"]), str(r["resource"]), r.get("in_sync") is True, r.get("lease"))
        for r in raw.get("replicas") or []
    )
    return Copy(
        vault,
        role,
        epoch,
        mode="async" if raw.get("mode") == "async" else "sync",
        primary=Peer(str(primary.get("node", "")), str(primary.get("resource", ""))),
        replicas=replicas,
        until=until if role == "primary" else None,
        expires=raw.get("expires") if type(raw.get("expires")) is int else None,
    )
