"""The bundled model loads from its own package with the network off, and gives unit vectors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vault_core import embedding
from vault_core.errors import InvalidArgumentError

OFFLINE = """
import socket
def refuse(*args, **kwargs):
    raise OSError("network is off in this test")
socket.socket.connect = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
from vault_core import embedding
model = embedding.load("bundled")
vectors = model.embed(["backlinks show which notes link here", "Rückverweise"])
print(model.name, vectors.shape[1], round(float((vectors ** 2).sum(axis=1)[0]), 3))
"""


def test_the_bundled_model_loads_and_embeds_with_the_network_off() -> None:
    ran = subprocess.run(
        [sys.executable, "-c", OFFLINE], capture_output=True, text=True, timeout=120, check=False,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.split() == ["wordllama-l2_supercat-256", "256", "1.0"]


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
