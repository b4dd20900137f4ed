"""The optional dense encoder, with a real int8 ONNX MiniLM from PyPI: unit vectors whose closeness is meaning."""

from __future__ import annotations

from pathlib import Path

import pytest

from saip.knowledge.dense import DenseEncoder, DenseUnavailable
from tests.unit.knowledge.samples import minilm


@pytest.fixture(scope="module")
def encoder() -> DenseEncoder:
    return DenseEncoder(*minilm())


def _dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_vectors_have_the_model_s_dimension_and_unit_length(encoder: DenseEncoder) -> None:
    [vector] = encoder.encode(["The broker restarts at night."])
    assert encoder.dimension == len(vector) == 384
    assert abs(_dot(vector, vector) - 1.0) < 1e-5


def test_texts_that_mean_the_same_are_closer_than_unrelated_ones(encoder: DenseEncoder) -> None:
    car, automobile, fruit = encoder.encode(
        ["My car would not start this morning.", "The automobile broke down.", "Bananas are rich in potassium."]
    )
    assert _dot(car, automobile) > _dot(car, fruit) + 0.2


def test_more_texts_than_one_batch_keep_their_order(encoder: DenseEncoder) -> None:
    texts = [f"sentence number {n}" for n in range(70)]
    assert encoder.encode(texts)[65] == pytest.approx(encoder.encode([texts[65]])[0], abs=1e-4)


def test_the_name_carries_the_model_s_fingerprint(encoder: DenseEncoder) -> None:
    assert encoder.name.endswith(encoder.fingerprint[:12]) and len(encoder.fingerprint) == 64


def test_a_missing_model_file_names_the_key(tmp_path: Path) -> None:
    _, tokenizer = minilm()
    with pytest.raises(DenseUnavailable, match=f"knowledge.dense-model names {tmp_path / 'absent.onnx'}"):
        DenseEncoder(tmp_path / "absent.onnx", tokenizer)
