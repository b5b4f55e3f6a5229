"""A policy behind any OpenAI-compatible chat-completions server (vLLM, SGLang, Ollama, ...).

Native tool calls, or tool calls parsed from the reply's text (Hermes / Qwen ``<tool_call>``)
for servers without a tool parser. Asks for token ids and logprobs (vLLM: ``return_token_ids``
gives ``prompt_token_ids`` and each choice's ``token_ids``; ``logprobs`` with
``return_tokens_as_token_ids`` names each sampled token ``token_id:N``) and records whatever
the server returns. Every request of an episode carries the episode id in a session header,
so a router can keep an episode on the server that holds its prefix cache.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import re
import time
from typing import TYPE_CHECKING, Any

from envfactory.contract.actions import Message
from envfactory.harness.toolcalls import parse_tool_calls
from envfactory.policies.base import (
    ContextOverflow,
    EpisodeContext,
    FatalFault,
    PolicyReply,
    PolicyRequest,
    RawAction,
    TransientFault,
)
from envfactory.tasks.seeds import stable_hash
from envfactory.trajectory.record import ChatMessage, ModelInfo

if TYPE_CHECKING:
    import httpx  # imported where a request is made: the command line need not load it

_OVERFLOW = re.compile(r"context length|context window|maximum context|too many tokens", re.I)
_TOKEN_ID = re.compile(r"^token_id:(-?\d+)$")
_KEEP = ("reasoning_content", "reasoning")


def retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def fault_of(response: httpx.Response) -> Exception:
    """The fault an error response stands for."""
    text = response.text[:300]
    status = response.status_code
    if status == 429 or status == 408 or status >= 500:
        return TransientFault(
            f"HTTP {status}: {text}", retry_after(response.headers.get("retry-after"))
        )
    if status in (400, 413) and _OVERFLOW.search(text):
        return ContextOverflow(f"HTTP {status}: {text}")
    return FatalFault(f"HTTP {status}: {text}")


def _ints(value: Any) -> list[int] | None:
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return value
    return None


def _logprobs(choice: dict[str, Any]) -> tuple[list[float] | None, list[int] | None]:
    """Sampled-token logprobs, and token ids when the tokens are named ``token_id:N``."""
    content = (choice.get("logprobs") or {}).get("content")
    if not isinstance(content, list) or not content:
        return None, None
    try:
        lps = [float(t["logprob"]) for t in content]
    except (TypeError, KeyError, ValueError):
        return None, None
    matches = [_TOKEN_ID.match(str(t.get("token", ""))) for t in content]
    ids = [int(m.group(1)) for m in matches if m] if all(matches) else None
    return lps, ids


def parse_completion(data: Any, call_index: int, text_reply_final: bool) -> PolicyReply:
    """A chat-completions response body as a reply; a body that is not one is a fault."""
    try:
        choice = data["choices"][0]
        msg = choice["message"]
        content = msg.get("content")
        if content is not None and not isinstance(content, str):
            raise TypeError("content is not text")
    except (TypeError, KeyError, IndexError) as exc:
        raise TransientFault(f"malformed response: {type(exc).__name__}: {exc}") from None
    message: ChatMessage = {"role": "assistant", "content": content}
    message.update({k: msg[k] for k in _KEEP if msg.get(k)})
    actions: list[RawAction] = []
    calls = msg.get("tool_calls") or []
    if calls:
        message["tool_calls"] = []
        for j, call in enumerate(calls):
            call = call if isinstance(call, dict) else {}
            fn = call.get("function")
            if not isinstance(fn, dict):
                fn = {}
            call_id = str(call.get("id") or f"call_{call_index}_{j}")
            name, args = fn.get("name"), fn.get("arguments", "{}")
            message["tool_calls"].append(
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
            )
            action: dict[str, Any] = {"type": "tool_call", "arguments": args, "call_id": call_id}
            if isinstance(name, str):
                action["tool"] = name
            actions.append(action)
    else:
        plain, parsed = parse_tool_calls(content or "")
        actions.extend(parsed)
        if not parsed:
            actions.append(Message(content=plain, final=text_reply_final))
    lps, lp_ids = _logprobs(choice)
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    return PolicyReply(
        message=message,
        actions=actions,
        prompt_ids=_ints(data.get("prompt_token_ids")) or _ints(choice.get("prompt_token_ids")),
        output_ids=_ints(choice.get("token_ids")) or lp_ids,
        output_logprobs=lps,
        finish_reason=choice.get("finish_reason"),
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
    )


class OpenAISession:
    def __init__(self, policy: OpenAIPolicy, ctx: EpisodeContext) -> None:
        self.policy = policy
        self.ctx = ctx
        self.native = ctx.harness.tool_format == "native"
        self.final = ctx.harness.text_reply == "final"

    def replay(self, observations: list[Any]) -> None:
        return None  # stateless: the transcript is the whole state

    async def act(self, request: PolicyRequest) -> PolicyReply:
        p = self.policy
        body: dict[str, Any] = {"model": p.model, "messages": request.messages, **p.sampling}
        if self.native and self.ctx.tools:
            body["tools"] = self.ctx.tools
            if self.ctx.harness.call_required(request.call_index):
                body["tool_choice"] = "required"
        if "seed" in p.sampling:  # the samples of a group differ, and each is reproducible
            body["seed"] = stable_hash(p.sampling["seed"], self.ctx.episode_id) % 2**31
        if p.logprobs:
            body["logprobs"] = True
        if p.token_ids:
            body["return_token_ids"] = True
            if p.logprobs:
                body["return_tokens_as_token_ids"] = True
        body.update(p.extra_body)
        headers = {p.session_header: self.ctx.episode_id}
        data = await p.post(body, headers)
        reply = parse_completion(data, request.call_index, self.final)
        reply.policy_version = p.policy_version
        return reply


class OpenAIPolicy:
    """A model behind ``{base_url}/chat/completions``. ``sampling`` (temperature, top_p,
    max_tokens, seed, ...) is passed through; ``policy_version`` is recorded on every call
    (a trainer sets it when it pushes new weights)."""

    local = False

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        sampling: dict[str, Any] | None = None,
        token_ids: bool = True,
        logprobs: bool = True,
        session_header: str = "X-Session-ID",
        timeout_s: float = 120.0,
        max_connections: int = 256,
        extra_body: dict[str, Any] | None = None,
        policy_version: str | None = None,
    ) -> None:
        self.name = model
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get(api_key_env)
        self.sampling = dict(sampling or {})
        self.token_ids = token_ids
        self.logprobs = logprobs
        self.session_header = session_header
        self.timeout_s = timeout_s
        self.max_connections = max_connections
        self.extra_body = dict(extra_body or {})
        self.policy_version = policy_version
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def info(self) -> ModelInfo:
        return ModelInfo(
            name=self.model, provider="openai", base_url=self.base_url, sampling=self.sampling
        )

    def session(self, ctx: EpisodeContext) -> OpenAISession:
        return OpenAISession(self, ctx)

    def _http(self) -> httpx.AsyncClient:
        import httpx

        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            self._client = httpx.AsyncClient(
                base_url=self.base_url,
                headers=headers,
                timeout=httpx.Timeout(self.timeout_s, connect=min(10.0, self.timeout_s)),
                limits=httpx.Limits(
                    max_connections=self.max_connections,
                    max_keepalive_connections=self.max_connections,
                ),
            )
            self._loop = loop
        return self._client

    async def post(self, body: dict[str, Any], headers: dict[str, str]) -> Any:
        """POST a chat completion; HTTP and transport failures become typed faults."""
        import httpx

        try:
            response = await self._http().post("/chat/completions", json=body, headers=headers)
        except httpx.TransportError as exc:
            raise TransientFault(f"{type(exc).__name__}: {exc}") from None
        if response.status_code != 200:
            raise fault_of(response)
        try:
            return json.loads(response.content)
        except ValueError:
            raise TransientFault(
                f"malformed JSON in the response: {response.text[:120]!r}"
            ) from None

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
