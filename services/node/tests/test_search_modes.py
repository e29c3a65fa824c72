"""note_search by words and by meaning through the node, and vault_stats telling how far the
vectors have come."""

from __future__ import annotations

import asyncio
import time

import pytest

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
