"""Fixtures shared by the tickets tests: fixed test-only keys and a verifier at NOW."""

from __future__ import annotations

import pytest

from tickets import KeySet, RevocationState, SigningKey, Verifier
from tickets import testing as t


@pytest.fixture
def key() -> SigningKey:
    return t.fixed_key(0)


@pytest.fixture
def other_key() -> SigningKey:
    return t.fixed_key(1)


@pytest.fixture
def keys(key: SigningKey) -> KeySet:
    return t.key_set(key)


@pytest.fixture
def state(key: SigningKey) -> RevocationState:
    return t.revocation_state(key)


@pytest.fixture
def verifier(key: SigningKey, state: RevocationState) -> Verifier:
    return t.verifier(key, state=state)
