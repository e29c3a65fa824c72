"""The bundled model loads from its own package with the network off, and gives unit vectors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, models, pre_tokenizers

from vault_core.errors import InvalidArgumentError
from vault_core.search import embedding, onnx_embedder

OFFLINE = """
import socket
def refuse(*args, **kwargs):
    raise OSError("network is off in this test")
socket.socket.connect = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
from vault_core.search import embedding, onnx_embedder
model = embedding.load("bundled")
vectors = model.embed(["backlinks show which notes link here", "Rückverweise"])
print(model.name, vectors.shape[1], round(float((vectors ** 2).sum(axis=1)[0]), 3))
import logging  # wordllama's import must not leave a plain-text root handler behind
print(len(logging.getLogger().handlers), logging.getLevelName(logging.getLogger().level))
"""


def test_the_bundled_model_loads_and_embeds_with_the_network_off_and_logs_nothing() -> None:
    ran = subprocess.run(
        [sys.executable, "-c", OFFLINE], capture_output=True, text=True, timeout=120, check=False,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.split() == ["wordllama-l2_supercat-256", "256", "1.0", "0", "WARNING"]


def test_similar_texts_are_closer_than_unrelated_ones() -> None:
    model = embedding.shared(embedding.BUNDLED)
    assert model is not None
    a, b, c = model.embed([
        "how do I see which notes link to the one I am reading",
        "the backlinks pane lists the notes that link to the current note",
        "export a canvas as an image",
    ])  # fmt: skip
    assert float(a @ b) > float(a @ c)
    assert np.allclose(np.linalg.norm(model.embed(["x", ""]), axis=1)[:1], 1.0)


def test_an_unknown_embedding_setting_and_a_bad_onnx_folder_are_refused(tmp_path: Path) -> None:
    assert embedding.load("off") is None
    with pytest.raises(InvalidArgumentError, match="bundled, off, or onnx"):
        embedding.load("gpt")
    with pytest.raises(InvalidArgumentError, match="onnx"):
        embedding.load(f"onnx:{tmp_path}")


def tiny_onnx_model(folder: Path) -> Path:
    """A real ONNX sentence model in miniature: a word-level tokenizer and one Gather of an
    embedding table, so "cat" and "kitten" point one way and "car" another."""
    folder.mkdir()

    vocab = {"[PAD]": 0, "[UNK]": 1, "cat": 2, "kitten": 3, "car": 4, "truck": 5}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(folder / "tokenizer.json"))
    table = np.zeros((len(vocab), 4), dtype=np.float32)
    table[2], table[3] = [1, 0.1, 0, 0], [0.9, 0.2, 0, 0]
    table[4], table[5] = [0, 0, 1, 0.1], [0, 0, 0.9, 0.3]
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["last_hidden_state"])],
        "tiny",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                       ["batch", "seq", 4])],
        [numpy_helper.from_array(table, "table")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(folder / "model.onnx"))
    return folder


def test_a_local_onnx_model_can_take_the_bundled_ones_place(tmp_path: Path) -> None:
    folder = tiny_onnx_model(tmp_path / "tiny-model")
    model = embedding.load(f"onnx:{folder}")
    assert model is not None
    assert model.name == "onnx-tiny-model"
    assert model.dimensions == 4
    cat, kitten, car = model.embed(["cat", "kitten kitten", "car truck"])
    assert float(cat @ kitten) > 0.9 > float(cat @ car)
    assert np.allclose(np.linalg.norm(model.embed(["cat car", "[PAD]"]), axis=1)[0], 1.0)


def test_a_model_hub_folder_with_the_model_in_onnx_and_a_file_named_directly(
    tmp_path: Path,
) -> None:
    folder = tiny_onnx_model(tmp_path / "hub-model")
    (folder / "onnx").mkdir()
    (folder / "model.onnx").rename(folder / "onnx" / "model.onnx")
    quantised = (folder / "onnx" / "model.onnx").read_bytes()  # a second file to pick
    (folder / "onnx" / "model_quantized.onnx").write_bytes(quantised)
    whole = embedding.load(f"onnx:{folder}")
    assert whole is not None
    assert whole.name == "onnx-hub-model"
    picked = embedding.load(f"onnx:{folder / 'onnx' / 'model_quantized.onnx'}")
    assert picked is not None
    assert picked.name == "onnx-hub-model-model_quantized"
    assert np.allclose(whole.embed(["cat"]), picked.embed(["cat"]))
    with pytest.raises(InvalidArgumentError, match=r"not an \.onnx file"):
        embedding.load(f"onnx:{folder / 'tokenizer.json'}")
    (folder / "tokenizer.json").unlink()
    with pytest.raises(InvalidArgumentError, match=r"no tokenizer\.json"):
        embedding.load(f"onnx:{folder}")


def test_the_folders_prompts_and_pooling_are_used_and_change_the_models_name(
    tmp_path: Path,
) -> None:
    folder = tiny_onnx_model(tmp_path / "e5-like")
    plain = embedding.load(f"onnx:{folder}")
    assert plain is not None
    # sentence-transformers' own files: E5's prompts, and the first token's vector
    (folder / "config_sentence_transformers.json").write_text(
        '{"prompts": {"query": "kitten ", "passage": "truck "}}'
    )
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')
    prompted = embedding.load(f"onnx:{folder}")
    assert prompted is not None
    assert prompted.name.startswith("onnx-e5-like-")
    assert prompted.name != plain.name
    # the first token is now the prompt's: every question reads as "kitten", every
    # section as "truck", whatever follows
    (question,) = prompted.embed_questions(["car"])
    (section,) = prompted.embed(["cat"])
    assert np.allclose(question, plain.embed(["kitten"])[0], atol=1e-6)
    assert np.allclose(section, plain.embed(["truck"])[0], atol=1e-6)
    # secondbrain's own file wins over them
    (folder / "embedding.json").write_text('{"pooling": "mean", "query_prefix": ""}')
    own = embedding.load(f"onnx:{folder}")
    assert own is not None
    assert np.allclose(own.embed_questions(["cat"]), plain.embed(["cat"]), atol=1e-6)
    assert own.name not in (plain.name, prompted.name)  # the passages still say "truck"
    # a shorter cut changes long texts' vectors, so the name too
    (folder / "embedding.json").write_text(
        '{"pooling": "mean", "query_prefix": "", "max_tokens": 1}'
    )
    shorter = embedding.load(f"onnx:{folder}")
    assert shorter is not None
    assert shorter.name not in (plain.name, prompted.name, own.name)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ('{"pooling": "median"}', "pooling must be one of"),
        ('{"query_prefix": 3}', "are text"),
        ('{"max_tokens": 0}', "max_tokens"),
        ('{"max_tokens": true}', "max_tokens"),
        ('{"normalize": false}', "unknown keys"),
        ("[1, 2]", "JSON object"),
        ("{not json", "not readable JSON"),
    ],
)
def test_a_bad_embedding_json_is_refused_with_what_is_wrong(
    tmp_path: Path, settings: str, message: str
) -> None:
    folder = tiny_onnx_model(tmp_path / "model")
    (folder / "embedding.json").write_text(settings)
    with pytest.raises(InvalidArgumentError, match=message):
        embedding.load(f"onnx:{folder}")


def test_the_last_tokens_pooling_takes_the_last_real_token_of_each_text(tmp_path: Path) -> None:
    folder = tiny_onnx_model(tmp_path / "model")
    plain = embedding.load(f"onnx:{folder}")
    (folder / "embedding.json").write_text('{"pooling": "last"}')
    last = embedding.load(f"onnx:{folder}")
    assert plain is not None
    assert last is not None
    # "car cat" padded beside a longer text still ends at "cat", not at a pad
    vectors = last.embed(["car cat", "cat car truck"])
    assert np.allclose(vectors[0], plain.embed(["cat"])[0], atol=1e-6)
    assert np.allclose(vectors[1], plain.embed(["truck"])[0], atol=1e-6)


def test_max_pooling_takes_each_dimensions_largest_over_the_real_tokens(tmp_path: Path) -> None:
    folder = tiny_onnx_model(tmp_path / "model")
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(
        '{"pooling_mode_mean_tokens": false, "pooling_mode_max_tokens": true}'
    )
    model = embedding.load(f"onnx:{folder}")
    assert model is not None
    (vector, _) = model.embed(["cat car", "cat car truck kitten"])
    expected = np.array([1, 0.1, 1, 0.1], dtype=np.float32)  # cat's and car's largest
    assert np.allclose(vector, expected / np.linalg.norm(expected), atol=1e-6)
    (nothing,) = model.embed([""])  # no token at all: a zero vector, not a NaN
    assert np.array_equal(nothing, np.zeros(4, dtype=np.float32))


def test_a_models_own_sentence_vector_is_used_and_an_unnamed_width_measured(
    tmp_path: Path,
) -> None:
    """A model that pools itself (`sentence_embedding`, here the largest of each dimension,
    which the mean pooling would not give) and whose outputs name their width rather than
    give it."""
    folder = tiny_onnx_model(tmp_path / "pooled")
    table = np.zeros((6, 4), dtype=np.float32)
    table[2], table[4] = [1, 0.1, 0, 0], [0, 0, 1, 0.1]
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["last_hidden_state"]),
         helper.make_node("ReduceMax", ["last_hidden_state"], ["sentence_embedding"],
                          axes=[1], keepdims=0)],
        "pooled",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                       ["batch", "seq", "width"]),
         helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT,
                                       ["batch", "width"])],
        [numpy_helper.from_array(table, "table")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(folder / "model.onnx"))
    loaded = embedding.load(f"onnx:{folder}")
    assert loaded is not None
    assert loaded.dimensions == 4
    (vector,) = loaded.embed(["cat cat car"])
    expected = np.array([1, 0.1, 1, 0.1], dtype=np.float32)  # the mean leans to "cat" 2:1
    assert np.allclose(vector, expected / np.linalg.norm(expected), atol=1e-6)


def test_texts_of_every_length_get_the_vector_each_gets_alone_in_their_own_order(
    tmp_path: Path,
) -> None:
    """Both embedders run a long list shortest first (each batch padded to its own longest
    text) and hand the vectors back in the order the texts came."""
    words = ["cat", "kitten", "car", "truck"]
    texts = [" ".join(words[(i + k) % 4] for k in range(1 + (i * 7) % 23)) for i in range(30)]
    texts[5] = "日本語のテキスト " * 40  # a long CJK text among short Latin ones
    bundled = embedding.shared(embedding.BUNDLED)
    tiny = embedding.load(f"onnx:{tiny_onnx_model(tmp_path / 'tiny')}")
    for model in (bundled, tiny):
        assert model is not None
        together = model.embed(texts)
        alone = np.concatenate([model.embed([text]) for text in texts])
        assert np.allclose(together, alone, atol=1e-5), model.name
        assert np.allclose(model.embed(texts[::-1]), together[::-1], atol=1e-5), model.name


def test_an_onnx_batch_holds_at_most_its_budget_of_padded_tokens() -> None:
    lengths = [3, 300, 20, 20, 100, 0, 129, 20]
    order = np.argsort(lengths, kind="stable")
    batches = onnx_embedder._batches(order, lengths)
    assert [i for batch in batches for i in batch] == list(order)  # every text, in order
    for batch in batches:
        widest = max(lengths[i] for i in batch)
        assert len(batch) == 1 or len(batch) * widest <= onnx_embedder.TOKENS
        assert len(batch) <= onnx_embedder.MAX_BATCH
    assert [len(b) for b in onnx_embedder._batches(np.arange(200), [1] * 200)] == [64, 64, 64, 8]
