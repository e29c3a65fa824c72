"""note_search by words and by meaning through the node, and vault_stats telling how far the
vectors have come."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from vault_core.search import embedding
from vault_core.search.embedding import Embedder, Vectors
from vault_node.testing import Harness, NodeFactory

pytestmark = pytest.mark.asyncio


async def ready(node: Harness) -> dict[str, object]:
    end = time.monotonic() + 60
    while True:
        stats = await node.ok("vault_stats")
        if stats["embedding"]["done"]:
            return stats
        if time.monotonic() > end:
            pytest.fail(f"the vault's vectors were never made: {stats['embedding']}")
        await asyncio.sleep(0.05)


async def test_a_node_with_embedding_ranks_by_meaning_once_the_vectors_are_made(
    start_node: NodeFactory,
) -> None:
    node = await start_node(embedding="bundled")
    stats = await ready(node)
    assert stats["embedding"]["model"] == "wordllama-l2_supercat-256"
    assert stats["embedding"]["embedded"] == stats["embedding"]["total"] == 5
    found = await node.ok("note_search", {"query": "how do I avoid hammering a server again"})
    assert found["mode"] == "hybrid"
    assert "embedding" not in found
    top = found["hits"][0]
    assert top["path"] in {"wiki/backoff.md", "wiki/rate-limiting.md"}
    assert top["matched"]
    semantic = await node.ok("note_search", {"query": "retry with jitter", "mode": "semantic"})
    assert semantic["mode"] == "semantic"
    assert all(hit["matched"] == ["meaning"] and hit["section"] for hit in semantic["hits"])


@dataclass
class Slow:
    """An operator's model that takes its time: it embeds only once `gate` is open (here it
    wears the bundled model's vectors under its own name)."""

    model: Embedder
    name: str = "onnx-stronger-model"
    dimensions: int = 256
    gate: threading.Event = field(default_factory=threading.Event)

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not self.gate.wait(60):
            raise TimeoutError("the test never opened the gate")
        return self.model.embed(texts)

    def embed_questions(self, texts: Sequence[str]) -> Vectors:
        return self.model.embed_questions(texts)


async def test_while_the_configured_model_embeds_the_bundled_one_ranks_by_meaning(
    start_node: NodeFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundled = embedding.shared(embedding.BUNDLED)
    assert bundled is not None
    slow = Slow(bundled)
    monkeypatch.setattr(
        embedding, "shared", lambda spec: bundled if spec == embedding.BUNDLED else slow
    )
    (tmp_path / "stronger-model").mkdir()
    node = await start_node(embedding=f"onnx:{tmp_path / 'stronger-model'}")
    try:
        question = {"query": "how do I avoid hammering a server again"}
        end = time.monotonic() + 60
        while (found := await node.ok("note_search", question))["mode"] != "hybrid":
            assert time.monotonic() < end, "the bundled model never stood in"
            await asyncio.sleep(0.05)
        assert found["hits"][0]["path"] in {"wiki/backoff.md", "wiki/rate-limiting.md"}
        waiting = {"model": "onnx-stronger-model", "embedded": 0, "total": 5, "done": False}
        assert found["embedding"] == waiting  # how far the configured model has come
        assert (await node.ok("vault_stats"))["embedding"] == waiting
    finally:
        slow.gate.set()
    stats = await ready(node)
    assert stats["embedding"]["model"] == "onnx-stronger-model"
    found = await node.ok("note_search", question)
    assert found["mode"] == "hybrid"
    assert "embedding" not in found


async def test_without_embedding_search_is_by_words_and_semantic_is_refused_clearly(
    node: Harness,
) -> None:
    found = await node.ok("note_search", {"query": "token buckets"})
    assert found["mode"] == "keyword"
    assert found["hits"][0]["matched"] == ["words"]
    code, message = await node.fails("note_search", {"query": "x", "mode": "semantic"})
    assert code == "invalid_argument"
    assert "embedding: off" in message
    assert "embedding" not in await node.ok("vault_stats")


async def test_note_related_counts_closeness_in_meaning(start_node: NodeFactory) -> None:
    files: dict[str, str | bytes] = {
        "a.md": "# Retry\n\nRetry failed requests with exponential backoff and jitter.\n",
        "b.md": "# Backoff\n\nWait longer after each failure before trying the call again.\n",
        "c.md": "# Recipes\n\nA cake needs flour, eggs and sugar.\n",
    }
    node = await start_node(files, embedding="bundled")
    await ready(node)
    related = (await node.ok("note_related", {"path": "a"}))["related"]
    assert related[0]["path"] == "b.md"
    plain = await start_node(files)
    assert (await plain.ok("note_related", {"path": "a"}))["related"] == []


async def test_max_tokens_gives_the_best_passages_within_the_budget(node: Harness) -> None:
    found = await node.ok("note_search", {"query": "bucket size", "max_tokens": 60})
    assert found["hits"][0]["path"] == "wiki/rate-limiting.md"
    passages = found["passages"]
    assert passages[0] == {
        "path": "wiki/rate-limiting.md",
        "title": "Rate limiting",
        "section": "Details",
        "text": "## Details\n\nBucket size is 600 per minute.",
        "tokens": 11,
        "why": 'section "Details" holds bucket, size',
        "cut": "",
    }
    assert sum(p["tokens"] for p in passages) <= 60
    assert all(p["cut"] in {"", "sentence", "mid-sentence"} for p in passages)
    assert "passages" not in await node.ok("note_search", {"query": "bucket size"})
