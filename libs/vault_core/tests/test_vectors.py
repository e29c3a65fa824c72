"""Vectors made in the background, kept in the index, searched in memory, kept current."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from tickets import Reach
from vault_core import library as library_module
from vault_core import scope
from vault_core.index.store import Index
from vault_core.library import OpenVault, Settings
from vault_core.search import embedding, hybrid
from vault_core.search.embedding import Embedder, Vectors
from vault_core.search.vectors import ROOM, STRIDE, VectorStore, _best, _dot, _Table
from vault_core.testing import make_vault

FLOAT16 = 1e-4  # a score's error with the question rounded to float16, as the table's rows
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

    def embed_questions(self, texts: Sequence[str]) -> Vectors:
        return self.embed(texts)


def wait(condition: Callable[[], bool], seconds: float = 60) -> None:
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            pytest.fail("the vector worker did not get there")
        time.sleep(0.02)


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[Callable[..., tuple[Index, VectorStore]]]:
    stores: list[tuple[Index, VectorStore]] = []

    def open_(
        files: dict[str, str | bytes] | None = None, model: Embedder | None = None
    ) -> tuple[Index, VectorStore]:
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
        "model": "wordllama-l2_supercat-256",
        "embedded": 3,
        "total": 3,
        "done": True,
    }
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


def test_progress_is_done_only_once_the_stored_vectors_are_in_memory(
    opened: Callable[..., tuple[Index, VectorStore]],
) -> None:
    """A node just started on an embedded vault: the table counts every note embedded,
    but search cannot rank by meaning until the vectors are loaded, and vault_stats must
    not say done before note_search would answer in hybrid mode."""
    index, vectors = opened(NOTES)
    wait(vectors.ready)
    vectors.stop()
    cold = VectorStore(index, Counting())  # not started: nothing loaded yet
    before = cold.progress()
    assert (before.embedded, before.total, before.done) == (3, 3, False)
    cold.start()
    try:
        wait(cold.ready)
        assert cold.progress().done
    finally:
        cold.stop()


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


def test_a_caller_with_path_rules_is_ranked_only_among_the_notes_it_may_see(
    opened: Callable[..., tuple[Index, VectorStore]],
) -> None:
    _, vectors = opened(NOTES)
    wait(vectors.ready)
    question = "which pages point at the one I have open?"
    with scope.applied(Reach.of(["canvas", "sync"])):
        hidden = vectors.nearest(question, 3)
        again = vectors.nearest(question, 3)  # from the cached mask
    assert sorted(m.path for m in hidden) == ["canvas/export.md", "sync/conflicts.md"]
    assert again == hidden
    assert vectors.nearest(question, 3)[0].path == "links/backlinks.md"
    with scope.applied(Reach.of(["links"])):
        assert [m.path for m in vectors.similar("links/backlinks.md", 3)] == []


def _unit(rng: np.random.Generator, rows: int) -> npt.NDArray[np.float32]:
    return embedding.normalised(rng.standard_normal((rows, 256)))


def _exact(table: _Table, vector: Vectors, rows: int) -> list[int]:
    size = len(table.meta)
    scores = table.vectors(list(range(size))) @ vector
    scores[~table.alive[:size]] = -np.inf
    return [int(row) for row in np.argsort(-scores)[:rows] if np.isfinite(scores[row])]


def test_ranking_by_the_first_dimensions_keeps_the_rows_the_whole_vectors_rank_first() -> None:
    """Rows near the question in every dimension are near it in the first 128 too: the first
    pass hands them on and the whole vectors put them in the exact order."""
    rng = np.random.default_rng(5)
    table = _Table(256, 128, candidates=20)
    question = _unit(rng, 1)[0]
    near = embedding.normalised(question + 0.6 * _unit(rng, 5))
    table.put("near.md", ["a", "b", "c", "d", "e"], near)
    for n, vector in enumerate(_unit(rng, 500)):
        table.put(f"far/{n}.md", [""], vector[None, :])
    found = table.nearest(question, 5)
    assert [row for row, _ in found] == _exact(table, question, 5)
    assert {table.meta[row][0] for row, _ in found} == {"near.md"}
    assert [score for _, score in found] == sorted((score for _, score in found), reverse=True)


def test_rows_the_caller_may_not_see_are_masked_before_the_first_pass_picks() -> None:
    """Five hundred invisible rows are nearer than the two visible ones: with room for only
    two candidates, the two visible rows are still the ones found."""
    rng = np.random.default_rng(6)
    table = _Table(256, 128, candidates=2)
    question = _unit(rng, 1)[0]
    for n, vector in enumerate(embedding.normalised(question + 0.3 * _unit(rng, 500))):
        table.put(f"hidden/{n}.md", [""], vector[None, :])
    table.put("open/a.md", [""], _unit(rng, 1))
    table.put("open/b.md", [""], _unit(rng, 1))
    visible = np.array([path.startswith("open/") for path, _ in table.meta])
    found = table.nearest(question, 3, visible)
    assert sorted(table.meta[row][0] for row, _ in found) == ["open/a.md", "open/b.md"]


def test_a_table_that_grows_and_sheds_dead_rows_keeps_every_live_vector() -> None:
    rng = np.random.default_rng(7)
    table = _Table(256, 128, candidates=50)
    vectors = _unit(rng, 3000)
    for n in range(3000):
        table.put(f"{n}.md", [""], vectors[n : n + 1])
    again = [n for n in range(3000) if n % 3]
    for n in again:
        table.drop(f"{n}.md")
    for n in again:  # the first of these finds two dead rows in three and compacts
        table.put(f"{n}.md", [""], vectors[n : n + 1])
    assert len(table.meta) == 3000
    for n in (1, 1500, 2999):
        (row,) = table.rows_of[f"{n}.md"]
        # kept at the index's precision, float16, as the store always hands them over
        assert np.allclose(table.vectors([row])[0], vectors[n].astype(np.float16), atol=1e-6)
        assert table.meta[table.nearest(vectors[n], 1)[0][0]][0] == f"{n}.md"


def test_a_question_asked_again_is_not_embedded_again(
    opened: Callable[..., tuple[Index, VectorStore]],
) -> None:
    """The next page of a search asks the same question: its vector is kept."""
    counting = Counting()
    _, vectors = opened(NOTES, counting)
    wait(vectors.ready)
    before = len(counting.texts)
    first = vectors.nearest("which pages point at the one I have open?", 3)
    again = vectors.nearest("which pages point at the one I have open?", 3)
    assert first == again
    assert counting.texts[before:] == ["which pages point at the one I have open?"]


def test_each_note_comes_once_by_its_nearest_section_after_rows_are_compacted() -> None:
    """Notes of several rows each: one match per note, its best row, nearest first — also
    once dead rows have been shed and every row has moved."""
    rng = np.random.default_rng(8)
    table = _Table(256, 128, candidates=64)
    question = _unit(rng, 1)[0]
    for n in range(400):
        table.put(f"{n}.md", ["a", "b", "c"], _unit(rng, 3))
    for n in range(400):
        if n % 3:
            table.drop(f"{n}.md")
    table.put("near.md", ["x", "y"], embedding.normalised(question + 0.4 * _unit(rng, 2)))
    assert len(table.meta) == 134 * 3 + 2  # compacted: the dropped notes' rows are gone
    found = table.nearest_notes(question, 10)
    owners = [table.meta[row][0] for row, _ in found]
    assert owners[0] == "near.md"
    assert len(set(owners)) == len(owners) == 10
    exact = table.vectors(list(range(len(table.meta)))) @ question
    for row, score in found:
        rows = table.rows_of[table.meta[row][0]]
        # the note's nearest row; the question is rounded to float16 as the rows are
        assert np.isclose(score, exact[rows].max(), atol=FLOAT16)


def test_the_int8_first_pass_keeps_the_nearest_rows_of_a_large_table() -> None:
    """Past `candidates` rows the int8 codes choose which rows the whole vectors rank: ten
    rows near the question among 5,000 random ones come first, in the exact order, with
    their exact scores."""
    rng = np.random.default_rng(9)
    table = _Table(256, 128, candidates=200)
    question = _unit(rng, 1)[0]
    near = embedding.normalised(question + np.linspace(0.3, 1.2, 10)[:, None] * _unit(rng, 10))
    for n, vector in enumerate(np.vstack([_unit(rng, 5000), near])):
        table.put(f"{n}.md", [""], vector[None, :])
    found = table.nearest(question, 10)
    assert [row for row, _ in found] == _exact(table, question, 10)
    assert {row for row, _ in found} == set(range(5000, 5010))
    exact = table.vectors([r for r, _ in found]) @ question
    assert np.allclose([s for _, s in found], exact, rtol=0, atol=FLOAT16)


def test_the_visibility_mask_follows_new_rows_and_compactions(tmp_path: Path) -> None:
    """Kept per set of rules and extended row by row: after appends, replacements and a
    compaction it is what asking about every row would give."""
    make_vault(tmp_path, {})
    index = Index.open(tmp_path / "test", "test")
    store = VectorStore(index, Counting())  # never started: the test fills its table
    rng = np.random.default_rng(10)
    table = store._table

    def fill(names: list[str]) -> None:
        for name in names:
            table.put(name, ["a", "b"], _unit(rng, 2))

    def expected() -> npt.NDArray[np.bool_]:
        return np.array([scope.visible(path) for path, _ in table.meta])

    try:
        with scope.applied(Reach.of(["open"])):
            fill([f"open/{n}.md" for n in range(300)] + [f"shut/{n}.md" for n in range(300)])
            assert np.array_equal(store._visible(), expected())
            fill(["open/new.md", "shut/new.md", "open/0.md"])  # two new notes, one replaced
            assert np.array_equal(store._visible(), expected())
            for name in [*(f"shut/{n}.md" for n in range(300)), "shut/new.md"]:
                table.drop(name)
            fill(["shut/late.md"])
            moves = table.moves
            fill(["open/1.md"])  # two dead rows in three: the table compacts
            assert table.moves == moves + 1
            assert np.array_equal(store._visible(), expected())
        with scope.applied(Reach.of(["shut"])):
            assert np.array_equal(store._visible(), expected())
    finally:
        index.close()


def test_the_best_scores_picked_by_a_sampled_threshold_are_the_best_scores() -> None:
    """`_best` over many scores partitions only those above a threshold from a sample: the
    scores it picks are exactly the best ones, with dead rows (-inf), ties, and a sample
    that lets too few through (then every score is partitioned)."""
    rng = np.random.default_rng(10)
    for trial in range(60):
        scores = rng.standard_normal(20_000).astype(np.float32)
        if trial % 3 == 0:
            scores[rng.random(20_000) < 0.4] = -np.inf
        if trial % 4 == 0:
            scores = np.round(scores, 1)  # many ties at the cut
        if trial % 5 == 0:  # the sampled rows are the best: the threshold lets too few by
            scores[::STRIDE] += 100
        for count in (1, 300, 2048):
            picked = _best(scores, count)
            exact = np.argpartition(-scores, count - 1)[:count]
            assert len(set(picked.tolist())) == count
            assert np.array_equal(np.sort(scores[picked]), np.sort(scores[exact]))


def test_the_float16_rows_are_ranked_with_float32_sums() -> None:
    """The whole vectors' pass sums float16 products in float32 (SimSIMD's AVX-512 FP16
    kernel, which sums in float16 and was up to 1.7e-4 off, is switched off)."""
    rng = np.random.default_rng(11)
    rows = _unit(rng, 3000).astype(np.float16)
    question = _unit(rng, 1)[0].astype(np.float16)
    exact = rows.astype(np.float64) @ question.astype(np.float64)
    assert np.abs(_dot(rows, question) - exact).max() < 1e-6
    assert _dot(rows[:0], question).shape == (0,)


def test_a_fresh_vault_gets_room_for_its_sections_at_once_and_none_of_it_is_touched(
    tmp_path: Path,
) -> None:
    files: dict[str, str | bytes] = {f"n{i}.md": f"# Note {i}\n\nText {i}.\n" for i in range(40)}
    make_vault(tmp_path, files)
    index = Index.open(tmp_path / "test", "test")
    index.reconcile()
    model = embedding.shared(embedding.BUNDLED)
    assert model is not None
    vectors = VectorStore(index, model).start()
    try:
        end = time.monotonic() + 60
        while not vectors.ready() and time.monotonic() < end:
            time.sleep(0.02)
        assert vectors.ready()
        table = vectors._table
        assert len(table.alive) >= 40 * ROOM  # made once, before the first round
        assert int(table.alive.sum()) == len(table.meta) == 40  # the room holds no rows
        assert vectors.nearest("Note 7", 1)[0].path == "n7.md"
    finally:
        vectors.stop()
        index.close()


# While a model other than the bundled one embeds a vault, the bundled model stands in:
# searches rank by meaning with it, and its vectors go once the configured model has every note.

STRONGER = "onnx-stronger"


@dataclass
class Gated(Counting):
    """A slower model: it embeds only once `gate` is open."""

    name: str = STRONGER
    gate: threading.Event = field(default_factory=threading.Event)

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not self.gate.wait(60):
            raise TimeoutError("the test never opened the gate")
        return super().embed(texts)


@dataclass
class Bundled(Counting):
    """The bundled model, counting what it embeds, as the library loads it in these tests."""

    model: Embedder | None = None

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts += texts
        assert self.model is not None
        return self.model.embed(texts)


@pytest.fixture
def bundled(monkeypatch: pytest.MonkeyPatch) -> Bundled:
    model = Bundled(model=embedding.shared(embedding.BUNDLED))
    monkeypatch.setattr(library_module.embedding, "shared", lambda spec: model)
    return model


def stored(opened: OpenVault, model: str) -> int:
    with opened.index.reading() as conn:
        (count,) = conn.execute(
            "SELECT count(*) FROM embeddings WHERE model = ?", [model]
        ).fetchone()
    return int(count)


def opened_vault(root: Path, model: Embedder) -> OpenVault:
    return OpenVault.open(root, "v", Settings(git=False, watch=False, embedder=model))


def new_vault(root: Path, model: Gated) -> OpenVault:
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(str(text))
    return opened_vault(root, model)


def embedded_whole(root: Path) -> Gated:
    """A new vault the slower model has embedded whole, closed again; the model."""
    stronger = Gated()
    stronger.gate.set()
    opened = new_vault(root, stronger)
    wait(lambda: opened.embedding is not None and opened.embedding.ready())
    opened.close()
    return stronger


def test_the_bundled_model_stands_in_until_the_configured_one_has_every_note(
    tmp_path: Path, bundled: Bundled
) -> None:
    stronger = Gated()
    opened = new_vault(tmp_path / "v", stronger)
    try:
        assert opened.stand_in is not None
        assert opened.embedding is not None
        wait(lambda: opened.vectors is opened.stand_in)
        found = hybrid.find(opened.index, opened.vectors, "which notes link to this one")
        assert found.mode == "hybrid"  # by meaning already, not by words alone
        assert found.results.hits[0].path == "links/backlinks.md"
        assert stored(opened, embedding.BUNDLED_MODEL) > 0
        assert not opened.embedding.ready()

        stronger.gate.set()
        wait(lambda: stored(opened, embedding.BUNDLED_MODEL) == 0)  # the stand-in's end
        assert opened.vectors is opened.embedding
        assert opened.embedding.ready()
        assert stored(opened, STRONGER) > 0
        assert not opened.stand_in.ready()
        found = hybrid.find(opened.index, opened.vectors, "which notes link to this one")
        assert found.mode == "hybrid"
    finally:
        stronger.gate.set()
        opened.close()


def test_a_vault_the_configured_model_has_whole_opens_without_a_stand_in(
    tmp_path: Path, bundled: Bundled
) -> None:
    stronger = embedded_whole(tmp_path / "v")
    embedded = len(bundled.texts)

    again = opened_vault(tmp_path / "v", stronger)
    try:
        assert again.stand_in is None
        wait(lambda: again.vectors is not None and again.vectors.ready())
        assert len(bundled.texts) == embedded  # the bundled model was not asked again
    finally:
        again.close()


def test_a_stand_ins_vectors_outlast_a_restart_while_the_configured_model_is_still_at_work(
    tmp_path: Path, bundled: Bundled
) -> None:
    stronger = Gated()
    opened = new_vault(tmp_path / "v", stronger)
    wait(lambda: opened.vectors is opened.stand_in)
    rows = stored(opened, embedding.BUNDLED_MODEL)
    opened.close()
    asked = len(bundled.texts)

    later = Gated()  # the same model, still slow, after a restart
    again = opened_vault(tmp_path / "v", later)
    try:
        wait(lambda: again.vectors is again.stand_in)
        assert stored(again, embedding.BUNDLED_MODEL) == rows
        assert len(bundled.texts) == asked  # loaded from the index, not embedded again
    finally:
        later.gate.set()
        again.close()


def test_the_bundled_model_configured_has_no_stand_in_and_drops_another_models_vectors(
    tmp_path: Path, bundled: Bundled
) -> None:
    embedded_whole(tmp_path / "v")

    back = opened_vault(tmp_path / "v", Counting())
    try:
        assert back.stand_in is None
        wait(lambda: back.vectors is not None and back.vectors.ready())
        assert stored(back, STRONGER) == 0
        assert stored(back, embedding.BUNDLED_MODEL) > 0
    finally:
        back.close()
