"""Text to vectors, offline: the model ships inside a package, or lies in a local folder.

`bundled` is WordLlama's `l2_supercat` (256 dimensions, MIT), whose weights and tokenizer
are in its wheel: it is loaded from the package directory with downloads disabled, so no
network is ever asked. `onnx:PATH` is a sentence-embedding model exported to ONNX with its
`tokenizer.json` (onnxruntime and tokenizers must be installed; `onnx_embedder`): the
operator's choice of a stronger, slower model. Every vector comes back L2-normalised, as float32.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from vault_core.errors import InvalidArgumentError

Vectors = npt.NDArray[np.float32]

BUNDLED = "bundled"
OFF = "off"
BUNDLED_MODEL = "wordllama-l2_supercat-256"
"""The name the bundled model's vectors are stored under."""


class Embedder(Protocol):
    """What turns texts into vectors; `name` is stored with every vector it made."""

    name: str
    dimensions: int

    def embed(self, texts: Sequence[str]) -> Vectors:
        """The vectors of a note's sections."""
        ...

    def embed_questions(self, texts: Sequence[str]) -> Vectors:
        """The vectors of questions asked (a model may want them marked otherwise)."""
        ...


HEADS = {BUNDLED_MODEL: 128}
"""Models whose leading dimensions are an embedding of their own (WordLlama is trained
Matryoshka-style: its 128-dimension model is the first 128 of these 256), so a search may
rank by them first (`vectors`). Held-out nDCG@10 of bench/eval with the 128 alone: 0.08
lower on cross-language questions, so they only choose what the whole vectors rank."""


def head(embedder: Embedder) -> int:
    """How many leading dimensions of the embedder's vectors rank on their own (0: none)."""
    return HEADS.get(embedder.name, 0)


def normalised(vectors: npt.NDArray[Any]) -> Vectors:
    array = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: Vectors = array / norms
    return result


BATCH = 8
"""Texts WordLlama pools at once. It pads a batch to its longest text and holds every
token's vector as float32 (texts × tokens × 256 × 4 bytes, twice over while pooling): at
its default of 64, a batch with one long CJK section took 300 MB for a moment and the
padding's work made embedding slower. Measured on 4,945 sections of the multilingual Help
vault (bench/eval's), one process at a time on the shared machine: 64 a batch 26.3 s and
323 MB above the process's size at most, 16 9.0 s and 83 MB, 8 4.2 s and 44 MB, 4 7.2 s
and 20 MB, 1 11.1 s and 2 MB."""


def shortest_first(texts: Sequence[str]) -> npt.NDArray[np.intp]:
    """The order that embeds `texts` shortest first, by UTF-8 bytes (a CJK character is a
    token or more, a Latin letter a quarter of one): each batch is then padded to little
    more than its own texts' length. Over a round of the multilingual Help vault's sections
    WordLlama embedded 1.3–1.4× as many a second (by characters 1.05×); an ONNX transformer
    orders its texts by their own token counts (`onnx_embedder`). The vectors are the same:
    padding is masked."""
    return np.argsort([len(text.encode()) for text in texts], kind="stable")


def in_order(vectors: Vectors, order: npt.NDArray[np.intp]) -> Vectors:
    """Vectors made in `order`, put back in the order of the texts they were made from."""
    result = np.empty_like(vectors)
    result[order] = vectors
    return result


@dataclass
class WordLlamaEmbedder:
    """WordLlama's static model from its own wheel: average-pooled token vectors."""

    name: str = BUNDLED_MODEL
    dimensions: int = 256

    def __post_init__(self) -> None:
        wordllama = _quietly_import_wordllama()
        package = Path(wordllama.__file__).parent
        # The wheel carries weights/ and tokenizers/; with the package as cache_dir the
        # loader finds both there, and disable_download keeps it from ever asking a hub.
        self._model = wordllama.WordLlama.load(
            "l2_supercat", cache_dir=package, dim=self.dimensions, disable_download=True
        )
        self._lock = threading.Lock()  # the tokenizer is shared: one batch at a time

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        order = shortest_first(texts)
        with self._lock:
            vectors = self._model.embed([texts[i] for i in order], batch_size=BATCH)
        return in_order(normalised(vectors), order)

    def embed_questions(self, texts: Sequence[str]) -> Vectors:
        return self.embed(texts)  # a static model reads a question as any text


def _quietly_import_wordllama() -> Any:
    """wordllama calls logging.basicConfig(level=INFO) when imported, which would print every
    library's INFO lines as plain text beside the node's JSON log: undo that at once."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    import wordllama  # noqa: PLC0415 — loaded only where embedding is on

    for handler in root.handlers[:]:
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)
    return wordllama


def load(spec: str) -> Embedder | None:
    """The embedder a setting names: `bundled`, `off`, or `onnx:FOLDER`."""
    spec = spec.strip()
    if spec == OFF:
        return None
    if spec == BUNDLED:
        return WordLlamaEmbedder()
    if spec.startswith("onnx:"):
        from vault_core.search.onnx_embedder import OnnxEmbedder  # noqa: PLC0415 — optional

        return OnnxEmbedder(Path(spec.removeprefix("onnx:")).expanduser())
    raise InvalidArgumentError(
        f"embedding {spec!r} is not known; use bundled, off, or onnx:/path/to/model-folder"
    )


_shared: dict[str, Embedder | None] = {}
_shared_lock = threading.Lock()


def shared(spec: str) -> Embedder | None:
    """`load`, once per process and setting: every vault of a node uses one model in memory."""
    with _shared_lock:
        if spec not in _shared:
            _shared[spec] = load(spec)
        return _shared[spec]
