"""A placed vault is created on the first call naming it; any other unknown name is not."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from vault_core import NotFoundError, Settings
from vault_node.placement import PLACED_LAYOUT, Placements, PlacingLibrary


@pytest.fixture
def placements() -> Placements:
    return Placements()


@pytest.fixture
def library(tmp_path: Path, placements: Placements) -> Iterator[PlacingLibrary]:
    opened = PlacingLibrary(tmp_path, Settings(git=False, watch=False), placements=placements)
    opened.open_all()
    yield opened
    opened.close()


def test_a_placed_vault_is_created_with_the_default_layout_when_first_named(
    library: PlacingLibrary, placements: Placements, tmp_path: Path
) -> None:
    placements.replace(["bobs"])
    with capture_logs() as logs:
        opened = library.get("bobs")
    assert opened.name == "bobs"
    assert "bobs" in library.names()
    assert (tmp_path / "bobs" / "wiki").is_dir()
    assert logs[-1] == {
        "event": "placed_vault_created", "vault": "bobs", "layout": PLACED_LAYOUT,
        "log_level": "info",
    }  # fmt: skip
    assert library.get("bobs").vault.root == opened.vault.root


def test_a_name_the_center_did_not_place_stays_not_found(
    library: PlacingLibrary, placements: Placements, tmp_path: Path
) -> None:
    placements.replace(["bobs"])
    with pytest.raises(NotFoundError):
        library.get("carols")
    assert not (tmp_path / "carols").exists()


def test_placements_are_replaced_as_a_whole() -> None:
    placements = Placements()
    placements.replace(["a", "b"])
    placements.replace(["c"])
    assert "c" in placements
    assert "a" not in placements
