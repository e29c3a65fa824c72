"""Configuration reload (docs/design.md#reload): on SIGHUP and when the file changes (every 2 s).

A reload loads and validates into a new config; only on full success is it swapped in.
Settings bound to what is already open (data, URL, listener, keys, git) keep their
running values, and a change to them is logged as `config_reload_partial`.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable
from pathlib import Path

import structlog
from starlette.concurrency import run_in_threadpool

from vault_node.config import NodeConfig, load_config
from vault_node.errors import ConfigError

log = structlog.get_logger("vault_node")

WATCH_INTERVAL = 2.0
FIXED = (
    "public_url",
    "listen",
    "data_dir",
    "center_url",
    "jwks_file",
    "revocation_file",
    "issuer",
    "git",
    "git_remote",
    "git_token",
    "git_author",
    "git_email",
    "watch",
    "revocation_poll",
    "state_dir",
    "log_level",
)


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """mtime, size and inode: an atomic replace changes the inode even when the rest stays."""
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size, found.st_ino


class Reloader:
    """Reloads the configuration from `path`: `running()` is the config in force, and
    `apply` swaps a new one in (the node's `apply_config`)."""

    def __init__(
        self,
        path: Path,
        running: Callable[[], NodeConfig],
        apply: Callable[[NodeConfig], None],
    ) -> None:
        self.path = path
        self.running = running
        self.apply = apply
        self.seen = _stamp(path)

    def reload(self) -> bool:
        """Load, validate, swap; False (and the old config stays) when the file is bad."""
        fresh = self.load()
        if fresh is None:
            return False
        self.apply(fresh)
        log.info("config_reloaded")
        return True

    def load(self) -> NodeConfig | None:
        """The file's config with the fixed settings kept at their running values; None
        (and the problems logged) when the file is bad."""
        self.seen = _stamp(self.path)
        try:
            fresh = load_config(self.path)
        except ConfigError as exc:
            # The problems are the report; a traceback would add nothing.
            log.error("config_reload_rejected", problems=exc.problems)  # noqa: TRY400
            return None
        running = self.running()
        ignored = [name for name in FIXED if getattr(fresh, name) != getattr(running, name)]
        if ignored:
            log.warning("config_reload_partial", ignored=ignored)
        return fresh.model_copy(update={name: getattr(running, name) for name in FIXED})

    async def watch(self) -> None:
        """Reload whenever the file's stamp changes (cancelled at shutdown)."""
        while True:
            await asyncio.sleep(WATCH_INTERVAL)
            if _stamp(self.path) != self.seen:
                await run_in_threadpool(self.reload)

    def on_sighup(self) -> None:
        """Install the SIGHUP handler on the running loop (where signals are supported)."""
        with contextlib.suppress(NotImplementedError, RuntimeError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self.reload)
