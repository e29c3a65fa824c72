"""Member passwords as salted argon2id PHC strings: 64 MiB, 3 passes, parallelism 1.

Each hash takes 64 MiB and most of a CPU core for a while, so at most two run at once,
in worker threads, and always before a change takes the store's lock: a burst of logins
or member updates can neither exhaust memory nor stall every other change.
"""

from __future__ import annotations

import asyncio

from argon2 import PasswordHasher, Type
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from center.errors import InvalidArgumentError

TIME_COST = 3
MEMORY_COST = 64 * 1024  # KiB
PARALLELISM = 1
CONCURRENT = 2
MIN_BYTES, MAX_BYTES = 12, 256


def standard_hasher() -> PasswordHasher:
    return PasswordHasher(
        time_cost=TIME_COST,
        memory_cost=MEMORY_COST,
        parallelism=PARALLELISM,
        hash_len=32,
        salt_len=16,
        type=Type.ID,
    )


def check_password(password: str) -> str:
    """12-256 UTF-8 bytes; the message never repeats the password."""
    size = len(password.encode("utf-8"))
    if not MIN_BYTES <= size <= MAX_BYTES:
        raise InvalidArgumentError("password", f"use {MIN_BYTES}-{MAX_BYTES} UTF-8 bytes")
    return password


class Passwords:
    """Hashes and verifies passwords, at most `CONCURRENT` at a time, off the event loop."""

    def __init__(self, hasher: PasswordHasher | None = None) -> None:
        self.hasher = hasher or standard_hasher()
        self._slots = asyncio.Semaphore(CONCURRENT)

    async def hash(self, password: str) -> str:
        check_password(password)
        async with self._slots:
            return await asyncio.to_thread(self.hasher.hash, password)

    async def verify(self, stored: str, password: str) -> bool:
        async with self._slots:
            return await asyncio.to_thread(self._verify, stored, password)

    def _verify(self, stored: str, password: str) -> bool:
        try:
            return self.hasher.verify(stored, password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False
