"""The optional dense encoder: an ONNX sentence-embedding model (BERT-style inputs, mean pooling, unit length) run
with onnxruntime on the CPU, its tokenizer from a tokenizer.json; both are files the person configures. Nothing is
fetched from a hub and torch is not needed (the `dense` extra installs onnxruntime and tokenizers)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from saip.knowledge.errors import InvalidRequest

MAX_TOKENS = 256  # what MiniLM-class models were trained on; longer chunks are truncated for the dense vector
BATCH = 32  # texts per inference run, which bounds the memory of one run


class DenseUnavailable(Exception):
    """The dense encoder cannot be loaded; the message names the key or the package to fix."""


def fingerprint(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


class DenseEncoder:
    def __init__(self, model: Path, tokenizer: Path) -> None:
        try:
            import numpy
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise DenseUnavailable(
                f"knowledge.dense-model is set but {exc.name} is not installed; install saip-knowledge[dense]"
            ) from None
        for key, path in (("knowledge.dense-model", model), ("knowledge.dense-tokenizer", tokenizer)):
            if not path.is_file():
                raise DenseUnavailable(f"{key} names {path}, which is not a file")
        self._np: Any = numpy
        self._tokenizer = Tokenizer.from_file(str(tokenizer))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        self._session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self._inputs = {item.name for item in self._session.get_inputs()}
        self.dimension = int(self._session.get_outputs()[0].shape[-1])
        self.fingerprint = fingerprint(model)
        self.name = f"{model.stem}-{self.fingerprint[:12]}"

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text (cosine similarity is then a dot product)."""
        vectors: list[list[float]] = []
        for first in range(0, len(texts), BATCH):
            vectors.extend(self._run(texts[first : first + BATCH]))
        return vectors

    def _run(self, texts: Sequence[str]) -> list[list[float]]:
        np = self._np
        encoded = self._tokenizer.encode_batch(list(texts))
        ids = np.array([item.ids for item in encoded], dtype=np.int64)
        mask = np.array([item.attention_mask for item in encoded], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self._session.run(None, {name: value for name, value in feeds.items() if name in self._inputs})[0]
        pooled = (hidden * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return [[float(x) for x in row] for row in pooled / np.where(norms == 0, 1, norms)]

    def encode_query(self, text: str) -> list[float]:
        if not text.strip():
            raise InvalidRequest("the query is empty; ask a question or give keywords")
        return self.encode([text])[0]
