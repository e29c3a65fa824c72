"""Fixtures for the vault-core tests: a vault in tmp_path with a fixed clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from vault_core.testing import make_vault
from vault_core.vault import Vault


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    return make_vault(tmp_path)
