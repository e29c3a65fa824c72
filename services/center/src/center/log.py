"""Structured JSON logs on stdout, with a last line of defence against leaked secrets.

Code never logs a header, a body or a credential. Still, every string that passes
through is scrubbed of anything shaped like one — a member or node credential, a JWS,
a bearer header — before it is rendered.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO, cast

import structlog

REDACTED = "[redacted]"
SECRET_SHAPES = re.compile(
    r"sb[mn]_[A-Za-z0-9_-]{16,}"  # member / node credentials
    r"|eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*"  # compact JWS
    r"|(?i:bearer)\s+\S+"  # any bearer header value
    r"|\$argon2id?\$[^\s'\"]+"  # PHC password hashes
)
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}
LEVELS["error"] = logging.ERROR


def scrub(value: Any) -> Any:
    """`value` with secret-shaped substrings replaced; containers are scrubbed inside."""
    if isinstance(value, str):
        return SECRET_SHAPES.sub(REDACTED, value)
    if isinstance(value, dict):
        return {key: scrub(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(item) for item in value]
    return value


def _redact(_logger: Any, _name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    return {key: scrub(value) for key, value in event.items()}


class _Stdout:
    """Whatever `sys.stdout` is when a line is written, not when logging was configured:
    a server that redirects stdout, or a test that captures it, gets every line."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()


def configure_logging(level: str = "info", stream: TextIO | None = None) -> None:
    """JSON lines to `stream` (stdout by default) at `level` and above."""
    sink = stream or cast("TextIO", _Stdout())  # structlog only calls write and flush
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            _redact,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(LEVELS[level]),
        logger_factory=structlog.PrintLoggerFactory(sink),
        cache_logger_on_first_use=False,
    )


def get_logger() -> Any:
    return structlog.get_logger("center")
