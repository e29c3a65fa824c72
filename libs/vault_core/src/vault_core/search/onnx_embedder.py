"""An operator's own sentence-embedding model, as ONNX, from a local folder (`onnx:PATH`).

PATH is a folder or one `.onnx` file in it. A folder as sentence-transformers or a model
hub lays it out works as it is: the model is `model.onnx` (else the first `*.onnx`) in the
folder or in its `onnx/` subfolder, `tokenizer.json` beside it or one folder up, and the
folder's own settings say how the model wants to be used:

- `1_Pooling/config.json`: the first token's vector (`pooling_mode_cls_token`, as BGE
  models), the last one's (`pooling_mode_lasttoken`), each dimension's largest
  (`pooling_mode_max_tokens`) or, by default, the mean of all;
- `config_sentence_transformers.json`: `prompts` named `query` and `passage` (or
  `document`), the words put before a question and before a section (E5 models are
  trained with "query: " and "passage: ");
- `sentence_bert_config.json`: `max_seq_length`, when it is below MAX_TOKENS;
- `embedding.json`, secondbrain's own, for a folder without those or to override them:
  `{"pooling": "mean" | "cls" | "last" | "max", "query_prefix": "...", "passage_prefix": "...",
  "max_tokens": 256}`.

A model whose output is already one vector per text (`sentence_embedding`) is used as it
is. The model's name, stored with each vector, changes with any setting that changes the
vectors, so a node embeds everything again rather than mix two kinds.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from vault_core.errors import InvalidArgumentError
from vault_core.search.embedding import Vectors, in_order, normalised

if TYPE_CHECKING:
    from tokenizers import Encoding

MAX_TOKENS = 256
"""Tokens of a text the model reads at most: sections are cut to about 300 tokens already
(`chunks.SIZE`), and a transformer's time grows faster than its input."""
Pooling = Literal["mean", "cls", "last", "max"]
POOLINGS: tuple[Pooling, ...] = ("mean", "cls", "last", "max")
SETTINGS = "embedding.json"


@dataclass(frozen=True)
class Settings:
    """How the model wants its texts and what of its output makes a text's vector."""

    pooling: Pooling = "mean"
    query_prefix: str = ""
    passage_prefix: str = ""
    max_tokens: int = MAX_TOKENS

    def digest(self) -> str:
        """A short mark of the settings, all of which change the vectors ("" for the
        defaults, so a plain folder's name stays as it was)."""
        if self == Settings():
            return ""
        text = json.dumps([self.pooling, self.query_prefix, self.passage_prefix, self.max_tokens])
        return hashlib.sha256(text.encode()).hexdigest()[:8]


@dataclass(frozen=True)
class Located:
    model: Path
    tokenizer: Path
    home: Path  # the folder the model's settings live in


def locate(path: Path) -> Located:
    """The model file, its tokenizer and its settings' folder for `onnx:PATH`."""
    if path.is_file() and path.suffix != ".onnx":
        raise InvalidArgumentError(f"embedding onnx: {path.name} is not an .onnx file")
    model = path if path.is_file() else _model_in(path) or _model_in(path / "onnx")
    if model is None:
        raise InvalidArgumentError(
            "embedding onnx: the folder needs a model .onnx file (in it or in onnx/) "
            "and tokenizer.json"
        )
    for home in (model.parent, model.parent.parent):
        if (home / "tokenizer.json").is_file():
            return Located(model, home / "tokenizer.json", home)
    raise InvalidArgumentError(
        f"embedding onnx: no tokenizer.json beside {model.name} or in the folder above it"
    )


def _model_in(folder: Path) -> Path | None:
    if (folder / "model.onnx").is_file():
        return folder / "model.onnx"
    return next(iter(sorted(folder.glob("*.onnx"))), None) if folder.is_dir() else None


def settings(home: Path) -> Settings:
    """The settings the folder's configuration files give (module docstring)."""
    found: dict[str, Any] = {}
    pooling = _json(home / "1_Pooling" / "config.json")
    if pooling.get("pooling_mode_cls_token"):
        found["pooling"] = "cls"
    elif pooling.get("pooling_mode_lasttoken"):
        found["pooling"] = "last"
    elif pooling.get("pooling_mode_max_tokens") and not pooling.get("pooling_mode_mean_tokens"):
        found["pooling"] = "max"
    prompts = _json(home / "config_sentence_transformers.json").get("prompts")
    if isinstance(prompts, dict):
        found["query_prefix"] = prompts.get("query", "")
        found["passage_prefix"] = prompts.get("passage", prompts.get("document", ""))
    length = _json(home / "sentence_bert_config.json").get("max_seq_length")
    if isinstance(length, int) and 0 < length < MAX_TOKENS:
        found["max_tokens"] = length
    own = _json(home / SETTINGS)
    known = [field.name for field in fields(Settings)]
    unknown = set(own) - set(known)
    if unknown:
        raise InvalidArgumentError(
            f"embedding onnx: {SETTINGS} has unknown keys {sorted(unknown)}; it knows"
            f" {', '.join(known)}"
        )
    found.update(own)
    chosen = Settings(**found)
    if chosen.pooling not in POOLINGS:
        raise InvalidArgumentError(f"embedding onnx: pooling must be one of {list(POOLINGS)}")
    if not isinstance(chosen.query_prefix, str) or not isinstance(chosen.passage_prefix, str):
        raise InvalidArgumentError("embedding onnx: query_prefix and passage_prefix are text")
    tokens = chosen.max_tokens
    if isinstance(tokens, bool) or not isinstance(tokens, int) or not 1 <= tokens <= 8192:
        raise InvalidArgumentError("embedding onnx: max_tokens must be a whole number, 1–8192")
    return chosen


def _json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidArgumentError(f"embedding onnx: {path.name} is not readable JSON") from exc
    if not isinstance(loaded, dict):
        raise InvalidArgumentError(f"embedding onnx: {path.name} must hold a JSON object")
    return loaded


class OnnxEmbedder:
    """A local ONNX sentence-embedding model (module docstring)."""

    def __init__(self, path: Path) -> None:
        try:
            import onnxruntime  # noqa: PLC0415 — optional, only for this embedder
            from tokenizers import Tokenizer  # noqa: PLC0415
        except ImportError as exc:
            raise InvalidArgumentError(
                "embedding onnx: needs the onnxruntime and tokenizers packages; install "
                "them, or use embedding: bundled"
            ) from exc
        found = locate(path)
        self.settings = settings(found.home)
        self._tokenizer = Tokenizer.from_file(str(found.tokenizer))
        self._tokenizer.enable_truncation(self.settings.max_tokens)
        self._tokenizer.no_padding()  # each batch is padded to its own longest (`_run`)
        self._session = onnxruntime.InferenceSession(
            str(found.model), providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        outputs = [o.name for o in self._session.get_outputs()]
        self._output = "sentence_embedding" if "sentence_embedding" in outputs else outputs[0]
        self._lock = threading.Lock()  # the tokenizer's padding settings are shared
        named = found.home.name
        if found.model.stem != "model":
            named += f"-{found.model.stem}"
        mark = self.settings.digest()
        self.name = f"onnx-{named}" + (f"-{mark}" if mark else "")
        width = self._session.get_outputs()[outputs.index(self._output)].shape[-1]
        self.dimensions = width if isinstance(width, int) else int(self._embedded(["x"]).shape[-1])

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Sections' (passages') vectors."""
        return self._embedded([self.settings.passage_prefix + text for text in texts])

    def embed_questions(self, texts: Sequence[str]) -> Vectors:
        """Questions' vectors: the model's query prompt before each."""
        return self._embedded([self.settings.query_prefix + text for text in texts])

    def _embedded(self, texts: list[str]) -> Vectors:
        """The texts tokenized at once, then run shortest first in batches of TOKENS, so a
        batch is padded to little more than its own texts: all-MiniLM-L6-v2 (int8) embedded
        sections of the English Help vault at 62–65 a second, with the process at 305–311
        MB at most, where eight at a time in the order they came made 25 a second and took
        600 MB."""
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        with self._lock:
            encoded = self._tokenizer.encode_batch(texts)
        lengths = [len(e.ids) for e in encoded]
        order = np.argsort(lengths, kind="stable")
        made = [self._run([encoded[i] for i in batch]) for batch in _batches(order, lengths)]
        return in_order(normalised(np.concatenate(made)), order)

    def _run(self, encoded: Sequence[Encoding]) -> Vectors:
        """One batch's vectors, its texts padded to the longest of them (pad id 0, masked)."""
        width = max(len(e.ids) for e in encoded)
        ids = np.zeros((len(encoded), width), dtype=np.int64)
        mask = np.zeros((len(encoded), width), dtype=np.int64)
        for row, e in enumerate(encoded):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = e.attention_mask
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        (out,) = self._session.run(
            [self._output], {k: v for k, v in feed.items() if k in self._inputs}
        )
        out = np.asarray(out, dtype=np.float32)
        if out.ndim == 2:  # one vector a text already
            return out
        if out.shape[1] == 0:  # texts of no tokens at all: zero vectors
            return np.zeros((len(out), out.shape[-1]), dtype=np.float32)
        if self.settings.pooling == "cls":
            first: Vectors = out[:, 0]
            return first
        if self.settings.pooling == "last":  # the last token the mask keeps
            ends: Vectors = out[np.arange(len(out)), np.maximum(mask.sum(axis=1) - 1, 0)]
            return ends
        if self.settings.pooling == "max":  # each dimension's largest over the real tokens
            largest: Vectors = np.where(mask[:, :, None] > 0, out, -np.inf).max(axis=1)
            largest[~np.isfinite(largest)] = 0.0  # a text of no tokens at all
            return largest
        weights = mask[:, :, None].astype(np.float32)
        pooled: Vectors = (out * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        return pooled


TOKENS = 256
"""Tokens a batch may hold once padded: a batch of texts of 200 tokens is one text, of 20
twelve. A transformer on the CPU gains little from running long texts together and holds
every one's activations: all-MiniLM-L6-v2 (int8) over 800 sections of the English Help
vault, shortest first, embedded 62 a second at a budget of 256 or 512 tokens, 56 at 2,048,
with the process at 311, 352 and 641 MB at most; over the same sections cut to 120
characters 274–288 a second (at most 64 a batch) against 199 one at a time."""
MAX_BATCH = 64


def _batches(order: npt.NDArray[np.intp], lengths: list[int]) -> list[list[int]]:
    """The texts in `order`, shortest first, in batches of at most TOKENS tokens once
    padded (a text longer than that alone) and at most MAX_BATCH texts."""
    batches: list[list[int]] = []
    batch: list[int] = []
    for i in order:
        if batch and ((len(batch) + 1) * lengths[i] > TOKENS or len(batch) == MAX_BATCH):
            batches.append(batch)
            batch = []
        batch.append(int(i))
    return [*batches, batch] if batch else batches
