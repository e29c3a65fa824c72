"""The node's heartbeat to the center (DESIGN §5.9), and the vaults the center places here.

Every `heartbeat_interval` the node posts, with its own credential, the vaults it holds,
the revocation seq it accepted and its audit checkpoint. The answer names vaults placed on
this node that it does not hold yet; each is created (default layout) on the first call
that names it. A failed beat is logged — never the credential — and retried at the next
one; it never stops the node.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import structlog
from starlette.concurrency import run_in_threadpool

from vault_core import Library, NotFoundError, OpenVault, VaultExistsError
from vault_core.paths import VAULT_NAME
from vault_node.feed import FETCH_TIMEOUT, reason_of

if TYPE_CHECKING:
    from vault_node.app import Node

log = structlog.get_logger("vault_node")

HEARTBEAT_PATH = "/v1/nodes/heartbeat"
PLACED_LAYOUT = "wiki-raw"
"""The layout of a vault the center placed here: the one a fresh data dir starts with."""
MAX_VAULTS = 4096
"""The center takes at most this many vaults in one heartbeat, and so does the node."""


class Placements:
    """The vaults the center's last answer placed on this node (thread-safe)."""

    def __init__(self) -> None:
        self._names: frozenset[str] = frozenset()
        self._lock = threading.Lock()

    def replace(self, names: Iterable[str]) -> None:
        with self._lock:
            self._names = frozenset(names)

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._names


class PlacingLibrary(Library):
    """A Library that creates a vault the center placed here on the first call naming it."""

    def __init__(self, *args: Any, placements: Placements, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.placements = placements

    def get(self, name: str) -> OpenVault:
        try:
            return super().get(name)
        except NotFoundError:
            if name not in self.placements:
                raise
        try:
            opened = self.create(name, PLACED_LAYOUT)
        except VaultExistsError:  # another call created it a moment ago
            return super().get(name)
        log.info("placed_vault_created", vault=name, layout=PLACED_LAYOUT)
        return opened


class Heartbeat:
    """Reports the node to the center and applies the answer. Reads the node's config at
    every beat, so a reload may change the id, the credential or the interval."""

    def __init__(self, node: Node, placements: Placements) -> None:
        self.node = node
        self.placements = placements
        self.url = f"{node.config.center_url}{HEARTBEAT_PATH}"
        self.sent = {"ok": 0, "failed": 0}
        self.last_ok: float | None = None
        self.checkpoint_ok: bool | None = None

    def body(self) -> dict[str, Any]:
        """What the center's `HeartbeatIn` takes: vaults, revocation seq, checkpoint."""
        state = self.node.verifier.revocation
        checkpoint = state.checkpoint
        names = self.node.library.names()
        if len(names) > MAX_VAULTS:
            log.warning("heartbeat_vaults_cut", vaults=len(names), sent=MAX_VAULTS)
        return {
            "vaults": names[:MAX_VAULTS],
            "revocation_seq": state.seq,
            "audit_checkpoint": (
                {"seq": checkpoint.seq, "hash": checkpoint.hash}
                if checkpoint is not None and checkpoint.seq >= 1
                else None
            ),
        }

    def beat_once(self) -> bool:
        """One heartbeat; False (and one log line) when it failed."""
        ok = self._beat()
        self.sent["ok" if ok else "failed"] += 1
        if ok:
            self.last_ok = time.time()
        return ok

    def _beat(self) -> bool:
        config = self.node.config
        headers = {"Authorization": f"Bearer {config.node_credential}"}
        try:
            response = httpx.post(
                self.url, json=self.body(), headers=headers, timeout=FETCH_TIMEOUT
            )
        except httpx.HTTPError as exc:
            log.warning("heartbeat_failed", error=reason_of(exc))
            return False
        if response.status_code != 200:
            _refused(response)
            return False
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if not isinstance(answer, dict) or answer.get("node") != config.node_id:
            log.error(
                "heartbeat_wrong_node",
                node_id=config.node_id,
                hint="the center answered for another node: node_credential belongs to it",
            )
            return False
        self._apply(answer)
        return True

    def _apply(self, answer: dict[str, Any]) -> None:
        self.placements.replace(_placements(answer.get("placements")))
        self._note_checkpoint(answer.get("checkpoint_ok"))
        seq, held = answer.get("revocation_seq"), self.node.verifier.revocation.seq
        feed = self.node.feed
        if feed is not None and type(seq) is int and (held is None or seq > held):
            feed.poll_once()  # the center published revocations this node has not seen

    def _note_checkpoint(self, verdict: object) -> None:
        if verdict is False and self.checkpoint_ok is not False:
            checkpoint = self.node.verifier.revocation.checkpoint
            log.error(
                "audit_checkpoint_unknown_to_center",
                checkpoint_seq=checkpoint.seq if checkpoint else None,
                hint="the center's audit chain lacks a record this node saw: restored or forked?",
            )
        self.checkpoint_ok = verdict if isinstance(verdict, bool) else None

    def age(self, now: float | None = None) -> float | None:
        """Seconds since the last successful beat; None before the first."""
        if self.last_ok is None:
            return None
        return max(0.0, (time.time() if now is None else now) - self.last_ok)

    async def run(self) -> None:
        """Beat now, then every `heartbeat_interval` (cancelled at shutdown)."""
        while True:
            await run_in_threadpool(self.beat_once)
            await anyio.sleep(self.node.config.seconds("heartbeat_interval"))


def _refused(response: httpx.Response) -> None:
    try:
        code = response.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        code = None
    hint = None
    if response.status_code == 401:
        hint = "the center does not know this node_credential; register with `node add`"
    log.warning(
        "heartbeat_failed",
        status=response.status_code,
        code=code[:64] if isinstance(code, str) else None,
        hint=hint,
    )


def _placements(value: object) -> list[str]:
    """Valid vault names from the answer; anything else is logged and dropped."""
    if not isinstance(value, list):
        return []
    names = [name for name in value[:MAX_VAULTS] if isinstance(name, str)]
    valid = [name for name in names if VAULT_NAME.fullmatch(name)]
    if len(valid) != len(value):
        log.warning("placements_refused", refused=len(value) - len(valid))
    return valid
