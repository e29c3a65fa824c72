"""The node's heartbeat to the center (docs/design.md#nodes-and-placement), which learns the
vaults placed here.

Every `heartbeat_interval` the node posts, with its own credential, the vaults it holds,
the revocation seq it accepted, its audit checkpoint and the version of the directory it
holds. The answer names the vaults placed on this node (`placement` creates one it does not
hold yet on the first call that names it), where every vault of the deployment lives and
its one address (`directory`, sent only when its version changed).
A failed beat is logged — never the credential — and retried at the next one; it never
stops the node.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import structlog
from starlette.concurrency import run_in_threadpool

from tickets import RevocationState
from vault_core import VAULT_NAME
from vault_node import directory
from vault_node.config import NodeConfig
from vault_node.feed import FETCH_TIMEOUT, reason_of
from vault_node.placement import Placements

log = structlog.get_logger("vault_node")

HEARTBEAT_PATH = "/v1/nodes/heartbeat"
MAX_VAULTS = 4096
"""The center takes at most this many vaults in one heartbeat, and so does the node."""


class Heartbeat:
    """Reports the node to the center and applies the answer. Reads `config()` at every
    beat, so a reload may change the id, the credential or the interval.

    `vaults` lists the vaults held, `revocation` is the verifier's live state, and `poll`
    (the revocation feed's, if any) is called when the center holds a newer seq."""

    def __init__(
        self,
        center_url: str,
        *,
        config: Callable[[], NodeConfig],
        revocation: RevocationState,
        vaults: Callable[[], list[str]],
        placements: Placements,
        poll: Callable[[], object] | None = None,
        known: directory.Directory | None = None,
        learned: Callable[[], None] = lambda: None,
    ) -> None:
        self.url = f"{center_url}{HEARTBEAT_PATH}"
        self.config = config
        self.revocation = revocation
        self.vaults = vaults
        self.placements = placements
        self.poll = poll
        self.directory = known if known is not None else directory.Directory()
        self.learned = learned
        self.sent = {"ok": 0, "failed": 0}
        self.last_ok: float | None = None
        self.checkpoint_ok: bool | None = None

    def body(self) -> dict[str, Any]:
        """What the center's `HeartbeatIn` takes: vaults, revocation seq, checkpoint and
        the directory's version (once the center has sent one)."""
        state = self.revocation
        checkpoint = state.checkpoint
        names = self.vaults()
        if len(names) > MAX_VAULTS:
            log.warning("heartbeat_vaults_cut", vaults=len(names), sent=MAX_VAULTS)
        sent: dict[str, Any] = {
            "vaults": names[:MAX_VAULTS],
            "revocation_seq": state.seq,
            "audit_checkpoint": (
                {"seq": checkpoint.seq, "hash": checkpoint.hash}
                if checkpoint is not None and checkpoint.seq >= 1
                else None
            ),
        }
        if self.directory.version is not None:
            sent["directory_version"] = self.directory.version
        return sent

    def beat_once(self) -> bool:
        """One heartbeat; False (and one log line) when it failed."""
        ok = self._beat()
        self.sent["ok" if ok else "failed"] += 1
        if ok:
            self.last_ok = time.time()
        return ok

    def _beat(self) -> bool:
        config = self.config()
        headers = {"Authorization": f"Bearer {config.node_credential}"}
        body = self.body()
        try:
            response = httpx.post(self.url, json=body, headers=headers, timeout=FETCH_TIMEOUT)
            if response.status_code == 422 and body.pop("directory_version", None):
                # A center from before directory versions (a rolling upgrade of several)
                # refuses the field: asked again as it knows, it sends the whole directory.
                response = httpx.post(self.url, json=body, headers=headers, timeout=FETCH_TIMEOUT)
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
        self.directory.learn(answer.get("directory"), answer.get("directory_version"))
        self.directory.deployment = directory.deployment_url(answer.get("mcp_url"))
        self.learned()
        self._note_checkpoint(answer.get("checkpoint_ok"))
        seq, held = answer.get("revocation_seq"), self.revocation.seq
        if self.poll is not None and type(seq) is int and (held is None or seq > held):
            self.poll()  # the center published revocations this node has not seen

    def _note_checkpoint(self, verdict: object) -> None:
        if verdict is False and self.checkpoint_ok is not False:
            checkpoint = self.revocation.checkpoint
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
            await anyio.sleep(self.config().durations.heartbeat_interval)


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
