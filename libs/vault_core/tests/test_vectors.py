"""Vectors made in the background, kept in the index, searched in memory, kept current."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from vault_core import embedding
from vault_core.embedding import Embedder, Vectors
from vault_core.index import Index
from vault_core.testing import make_vault
from vault_core.vectors import VectorStore

NOTES: dict[str, str | bytes] = {
    "links/backlinks.md": "# Backlinks\n\nThe backlinks pane lists every note that links to the"
    " note you are reading.\n",
    "canvas/export.md": "# Export a canvas\n\nSave a canvas as a PNG image or as SVG.\n",
    "sync/conflicts.md": "# Sync conflicts\n\nWhen two devices edit one file, sync keeps both.\n",
}


@dataclass
class Counting:
    """The bundled model, counting what it is asked to embed (and able to wear another name)."""

    name: str = "wordllama-l2_supercat-256"
    texts: list[str] = field(default_factory=list)

    @property
    def dimensions(self) -> int:
        return 256

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts += texts
        model = embedding.shared(embedding.BUNDLED)
        assert model is not None
        return model.embed(texts)


def wait(condition: Callable[[], bool], seconds: float = 60) -> None:
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            pytest.fail("the vector worker did not get there")
        time.sleep(0.02)


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[Callable[..., tuple[Index, VectorStore]]]:
    stores: list[tuple[Index, VectorStore]] = []

    def open_(files: dict[str, str | bytes] | None = None, model: Embedder | None = None
              ) -> tuple[Index, VectorStore]:  # fmt: skip
        if files is not None:
            make_vault(tmp_path, files)
        index = Index.open(tmp_path / "test", "test")
        index.reconcile()
        vectors = VectorStore(index, model or Counting()).start()
        index.on_change = vectors.poke
        stores.append((index, vectors))
        return index, vectors

    yield open_
    for index, vectors in stores:
        vectors.stop()
        index.close()


def test_a_vault_is_embedded_in_the_background_and_found_by_meaning(
    opened: Callable[..., tuple[Index, VectorStore]],
) -> None:
    _, vectors = opened(NOTES)
    wait(vectors.ready)
    assert vectors.progress().as_dict() == {
        "model": "wordllama-l2_supercat-256", "embedded": 3, "total": 3, "done": True,
    }  # fmt: skip
    best = vectors.nearest("which pages point at the one I have open?", 3)
    assert best[0].path == "links/backlinks.md"
    assert best[0].heading == "Backlinks"
    assert best[0].score > best[-1].score


def test_a_change_is_embedded_again_and_a_deletion_forgotten(
    tmp_path: Path, opened: Callable[..., tuple[Index, VectorStore]]
) -> None:
    index, vectors = opened(NOTES)
    wait(vectors.ready)
    root = tmp_path / "test"
    (root / "canvas/export.md").write_text("# Export\n\nTurn a canvas into a picture file.\n")
    (root / "sync/conflicts.md").unlink()
    index.update_paths(["canvas/export.md", "sync/conflicts.md"])

    def current() -> bool:
        paths = {m.path for m in vectors.nearest("picture", 5)}
        return vectors.ready() and paths == {"canvas/export.md", "links/backlinks.md"}

    wait(current)
    with index.reading() as conn:
        stored = {p for (p,) in conn.execute("SELECT DISTINCT path FROM embeddings")}
    assert stored == {"canvas/export.md", "links/backlinks.md"}
    assert vectors.progress().total == 2


def test_a_restart_loads_the_vectors_instead_of_embedding_again(
    opened: Callable[..., tuple[Index, VectorStore]],
) -> None:
    _, vectors = opened(NOTES)
    wait(vectors.ready)
    vectors.stop()
    again = Counting()
    _, reopened = opened(None, again)
    wait(reopened.ready)
    assert again.texts == []
    assert reopened.nearest("image export", 1)[0].path == "canvas/export.md"


def test_a_new_model_embeds_everything_again_and_drops_the_old_vectors(
    opened: Callable[..., tuple[Index, VectorStore]],
) -> None:
    index, vectors = opened(NOTES)
    wait(vectors.ready)
    vectors.stop()
    other = Counting(name="another-model")
    _, reopened = opened(None, other)
    wait(reopened.ready)
    assert len(other.texts) == 3
    with index.reading() as conn:
        models = {m for (m,) in conn.execute("SELECT DISTINCT model FROM embeddings")}
    assert models == {"another-model"}


def test_a_write_never_waits_for_the_model(
    tmp_path: Path, opened: Callable[..., tuple[Index, VectorStore]]
) -> None:
    """The model is held mid-batch by a gate; the index takes a write all the same, and the
    gate, not a time-out, is what lets the model go on."""

    @dataclass
    class Gated(Counting):
        gate: threading.Event = field(default_factory=threading.Event)
        released: list[bool] = field(default_factory=list)

        def embed(self, texts: Sequence[str]) -> Vectors:
            self.released.append(self.gate.wait(60))
            return super().embed(texts)

    model = Gated()
    index, vectors = opened(NOTES, model)
    (tmp_path / "test" / "new.md").write_text("# New\n\nfresh words\n")
    index.update_paths(["new.md"])
    with index.reading() as conn:
        assert conn.execute("SELECT count(*) FROM notes WHERE path = 'new.md'").fetchone() == (1,)
    assert not vectors.ready()
    model.gate.set()
    wait(vectors.ready)
    assert model.released
    assert all(model.released)
    assert vectors.progress().embedded == 4


def test_similar_notes_are_found_from_a_notes_own_vectors(
    opened: Callable[..., tuple[Index, VectorStore]],
) -> None:
    notes = {**NOTES, "links/graph.md": "# Graph view\n\nSee how notes link to each other.\n"}
    _, vectors = opened(notes)
    wait(vectors.ready)
    similar = vectors.similar("links/backlinks.md", 3)
    assert "links/backlinks.md" not in [m.path for m in similar]
    assert similar[0].path == "links/graph.md"
    assert vectors.similar("no/such.md", 3) == []
