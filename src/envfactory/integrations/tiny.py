"""A tiny randomly initialised causal LM and a byte-level tokenizer, built locally.

For examples and tests of the trainer adapters on a CPU, with nothing downloaded: the tokenizer
is a byte-level BPE trained in a second on text from the worlds themselves (so any text
round-trips exactly), with a ChatML template that renders tools and Hermes / Qwen
``<tool_call>`` blocks; the model is a two-layer Qwen2 with random weights. It generates noise,
but every token, logprob and mask it produces is real.
"""

from __future__ import annotations

import json
from typing import Any

from envfactory.harness.config import HarnessConfig
from envfactory.harness.prompt import exposed_tools, opening
from envfactory.harness.toolcalls import render_call, tool_response
from envfactory.registry import make

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MARKUP = [
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<tools>",
    "</tools>",
]

#: ChatML with tools in the system turn and Hermes / Qwen tool calls and responses. It renders
#: every earlier turn exactly as it was generated, so a conversation's tokens only ever grow
#: at the end (prefix-preserving, as multi-turn training needs).
_NL = "{{ '\\n' }}"  # a newline right after a tag (transformers renders with trim_blocks)
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and (message.role == 'system' or tools) %}<|im_start|>system" + _NL + ""
    "{% if message.role == 'system' %}{{ message.content }}{% endif %}"
    "{% if tools %}" + _NL + _NL + "# Tools" + _NL + _NL + "<tools>"
    "{% for tool in tools %}"
    + _NL
    + "{{ tool | tojson }}{% endfor %}"
    + _NL
    + "</tools>"
    + _NL
    + _NL
    + "To call a function, write <tool_call>"
    + _NL
    + '{"name": <function-name>, "arguments": <args-json-object>}'
    + _NL
    + "</tool_call>"
    "{% endif %}<|im_end|>" + _NL + "{% endif %}"
    "{% if message.role == 'user' %}<|im_start|>user"
    + _NL
    + "{{ message.content }}<|im_end|>"
    + _NL
    + "{% elif message.role == 'assistant' %}<|im_start|>assistant"
    + _NL
    + ""
    "{% if message.content %}{{ message.content }}{% endif %}"
    "{% for call in message.tool_calls or [] %}"
    "{% set fn = call.function if call.function is defined else call %}"
    "{% if message.content or not loop.first %}" + _NL + "{% endif %}"
    "<tool_call>" + _NL + '{"name": "{{ fn.name }}", "arguments": '
    "{% if fn.arguments is string %}{{ fn.arguments }}{% else %}{{ fn.arguments | tojson }}"
    "{% endif %}}" + _NL + "</tool_call>{% endfor %}<|im_end|>" + _NL + ""
    "{% elif message.role == 'tool' %}"
    "{% if loop.first or messages[loop.index0 - 1].role != 'tool' %}<|im_start|>user{% endif %}"
    + _NL
    + "<tool_response>"
    + _NL
    + "{{ message.content }}"
    + _NL
    + "</tool_response>"
    "{% if loop.last or messages[loop.index0 + 1].role != 'tool' %}<|im_end|>" + _NL + ""
    "{% endif %}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant" + _NL + "{% endif %}"
)


def corpus(env_ids: list[str] | None = None, per_env: int = 3) -> list[str]:
    """Text to train the tokenizer on: prompts, tool schemas and tool calls of a few tasks."""
    lines: list[str] = []
    harness = HarnessConfig(tool_format="text")
    for env_id in env_ids or ["retail"]:
        env = make(env_id)
        schemas = env.tools("openai")
        for task in env.tasks("train", env.difficulties[0], per_env):
            tools = exposed_tools(task.public, schemas, harness)
            lines += [m["content"] for m in opening(task.public, tools, harness)]
            for step in task.hidden.gold_plan:
                lines.append(render_call(step.tool, step.arguments))
        lines.append(tool_response(json.dumps(schemas)))
    return lines


def tiny_tokenizer(env_ids: list[str] | None = None, vocab_size: int = 1024) -> Any:
    """A byte-level BPE tokenizer trained on :func:`corpus`, with :data:`CHAT_TEMPLATE`."""
    from tokenizers import AddedToken as RawAddedToken
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(env_ids), trainer=trainer)
    tok.add_tokens([RawAddedToken(t, normalized=False, special=False) for t in MARKUP])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    set_tool_parser(tokenizer)
    return tokenizer


def set_tool_parser(tokenizer: Any) -> None:
    """Teach ``tokenizer.parse_response`` (what TRL reads tool calls with) the Qwen / Hermes
    reply format :data:`CHAT_TEMPLATE` uses, when TRL is installed."""
    try:
        from trl import chat_template_utils as ctu
    except ImportError:
        return
    if ctu._SUPPORTS_RESPONSE_TEMPLATE:
        tokenizer.response_template = ctu.qwen3_template
    else:
        tokenizer.response_schema = ctu.qwen3_schema


def tiny_model(tokenizer: Any, *, seed: int = 0, layers: int = 2, hidden: int = 32) -> Any:
    """A randomly initialised Qwen2 causal LM sized to ``tokenizer``."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=16384,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model
