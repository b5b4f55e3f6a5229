"""The tiny model the training tests train: a two-layer Qwen2 saved as a model folder."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model and its tokenizer, saved as a model folder (``--model DIR``)."""
    from envfactory.integrations.tiny import tiny_model, tiny_tokenizer

    folder = tmp_path_factory.mktemp("models") / "tiny-qwen2"
    tokenizer = tiny_tokenizer(["hotel", "retail"])
    tokenizer.save_pretrained(folder)
    tiny_model(tokenizer).save_pretrained(folder)
    return folder
