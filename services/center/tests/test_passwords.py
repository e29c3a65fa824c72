"""argon2id with the seed's parameters, at most two hashes at once, never under the lock."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import argon2
import httpx
import pytest
from fastapi import FastAPI

from center import testing as t
from center.config import Settings
from center.errors import InvalidArgumentError
from center.passwords import CONCURRENT, Passwords, check_password, standard_hasher


class CountingHasher(argon2.PasswordHasher):
    """The standard parameters, counting how many hashes run at the same moment; a hash
    may be held until `release` is set."""

    def __init__(self) -> None:
        reference = standard_hasher()
        super().__init__(
            time_cost=reference.time_cost,
            memory_cost=reference.memory_cost,
            parallelism=reference.parallelism,
        )
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.entered = threading.Semaphore(0)
        self.release = threading.Event()
        self.release.set()

    def hash(self, password: str | bytes, *, salt: bytes | None = None) -> str:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        self.entered.release()
        self.release.wait(timeout=30)
        try:
            return super().hash(password, salt=salt)
        finally:
            with self.lock:
                self.running -= 1


def test_the_parameters_are_64_mib_three_passes_one_lane() -> None:
    params = argon2.extract_parameters(standard_hasher().hash("a long enough password"))
    assert params.type is argon2.Type.ID
    assert (params.memory_cost, params.time_cost, params.parallelism) == (65536, 3, 1)


@pytest.mark.parametrize("password", ["short", "x" * 257, "é" * 129])
def test_passwords_are_12_to_256_utf8_bytes(password: str) -> None:
    with pytest.raises(InvalidArgumentError, match="12-256 UTF-8 bytes"):
        check_password(password)


@pytest.mark.asyncio
async def test_verify_accepts_the_password_and_nothing_else() -> None:
    passwords = Passwords()
    stored = await passwords.hash("a long enough password")
    assert await passwords.verify(stored, "a long enough password")
    assert not await passwords.verify(stored, "another long password")
    assert not await passwords.verify("not a hash", "a long enough password")


async def until(condition: Callable[[], bool], what: str, deadline: float = 30) -> None:
    """Let the event loop run until `condition` holds; fail naming `what` after `deadline` s."""
    ends = time.monotonic() + deadline
    while not condition():
        assert time.monotonic() < ends, f"not within {deadline} s: {what}"
        await asyncio.sleep(0.001)


def waits_for_a_slot(job: asyncio.Task[str]) -> bool:
    """Whether `job` is parked in the semaphore that admits a hash (and can go no further
    until a running hash ends)."""
    awaited = getattr(job.get_coro(), "cr_await", None)
    while awaited is not None:
        if getattr(awaited, "__qualname__", "") == "Semaphore.acquire":
            return True
        awaited = getattr(awaited, "cr_await", None)
    return False


@pytest.mark.asyncio
async def test_at_most_two_hashes_run_at_once() -> None:
    hasher = CountingHasher()
    hasher.release.clear()
    passwords = Passwords(hasher)
    jobs = [asyncio.create_task(passwords.hash(f"password number {i}")) for i in range(6)]
    for _ in range(CONCURRENT):
        await asyncio.to_thread(hasher.entered.acquire)
    waiting = len(jobs) - CONCURRENT
    await until(
        lambda: sum(map(waits_for_a_slot, jobs)) == waiting,
        f"{waiting} hashes waiting for a slot while {CONCURRENT} run",
    )
    assert hasher.running == CONCURRENT
    hasher.release.set()
    await asyncio.gather(*jobs)
    assert hasher.most == CONCURRENT


@pytest.mark.asyncio
async def test_hashing_holds_no_lock_other_changes_need(settings: Settings) -> None:
    hasher = CountingHasher()
    hasher.release.clear()
    async with t.running(settings, passwords=Passwords(hasher)) as app, t.client(app) as client:
        slow = asyncio.create_task(t.add_member(client, "slow", password="a long enough password"))
        await asyncio.to_thread(hasher.entered.acquire)
        fast = await client.post(
            "/v1/members", json={"id": "fast", "vaults": ["team"]}, headers=t.ADMIN
        )
        assert fast.status_code == 201
        assert not slow.done()
        hasher.release.set()
        await slow


@pytest.mark.asyncio
async def test_a_password_can_be_set_later(app: FastAPI, client: httpx.AsyncClient) -> None:
    await t.add_member(client, "alice")
    changed = await client.patch(
        "/v1/members/alice", json={"password": "a long enough password"}, headers=t.ADMIN
    )
    assert changed.json()["password"] is True
    assert changed.json()["generation"] == 1
