"""The node's logs: one JSON object per line on stdout, as operators' collectors read them.

Every line has `ts` (RFC 3339 UTC, milliseconds), `level` and `event`; the fields follow.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import orjson
import structlog

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
}


def configure_logging(level: str = "info") -> None:
    """One JSON object per line on stdout: `ts` (ms, UTC), `level`, `event`, fields."""
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            _timestamp,
            structlog.processors.JSONRenderer(serializer=_dumps),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(LEVELS.get(level, logging.INFO)),
        logger_factory=structlog.PrintLoggerFactory(sys.stdout),
        cache_logger_on_first_use=False,  # tests reconfigure; caching would pin old sinks
    )


def _timestamp(_: object, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """`ts` as RFC 3339 UTC with milliseconds, e.g. 2026-11-30T09:15:24.123Z."""
    now = dt.datetime.now(dt.UTC)
    event["ts"] = now.isoformat(timespec="milliseconds").removesuffix("+00:00") + "Z"
    return event


def _dumps(event: Any, **_: Any) -> str:
    """The log line; orjson costs a tenth of the standard encoder, on every tool call."""
    try:
        return orjson.dumps(event, default=repr).decode("utf-8")
    except (orjson.JSONEncodeError, TypeError):  # a lone surrogate a client sent
        return json.dumps(event, default=repr)
