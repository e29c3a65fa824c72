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
from vault_core.search import embedding

OFFLINE = """
import socket
def refuse(*args, **kwargs):
    raise OSError("network is off in this test")
socket.socket.connect = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
from vault_core.search import embedding
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
