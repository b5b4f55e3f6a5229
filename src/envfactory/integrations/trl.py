"""TRL: envfactory worlds for ``GRPOTrainer``, two ways.

- ``environment_factory``: :func:`environment_factory` gives a class per environment whose
  public methods are the world's tools (typed arguments, Google-style docstrings, so TRL's
  schema reader turns them into tool definitions), with ``reset(**row)`` starting the row's
  task and ``get_reward()`` returning the verifier's reward. TRL runs the tool-calling loop.
- ``rollout_func``: :class:`EnvfactoryRollout` runs the rows' tasks through the rollout engine
  (groups, retries, the harness, a trajectory store) and returns prompt ids, completion ids,
  logprobs and the environment mask from the episodes' token-exact records.

:func:`task_dataset` turns a stream of task addresses into the rows both expect.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from envfactory.contract.actions import Message, ToolCall
from envfactory.contract.verdict import Verdict
from envfactory.harness.config import HarnessConfig
from envfactory.integrations.text import load_task, task_openings
from envfactory.policies.base import RolloutPolicy
from envfactory.registry import make
from envfactory.rollout.engine import RolloutEngine
from envfactory.rollout.types import EngineConfig, TaskRef
from envfactory.trajectory.convert import MissingTokens, to_sequence
from envfactory.trajectory.record import EpisodeRecord
from envfactory.trajectory.store import TrajectoryStore

#: The row field (and the key on the request message) that names a row's task.
TASK_KEY = "task_id"
_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "object": dict,
}


# -- rows ----------------------------------------------------------------------------------------


def task_rows(
    tasks: Iterable[TaskRef | str], harness: HarnessConfig | None = None
) -> Iterable[dict[str, Any]]:
    """One GRPOTrainer row per task: a conversational ``prompt`` (system prompt, request), the
    ``task_id`` (also on the request message, where a ``rollout_func`` finds it), and the
    ``environment`` it belongs to (for a dict ``environment_factory``)."""
    for ref, (system, request) in task_openings(tasks, harness or HarnessConfig()):
        yield {
            "prompt": [system, {**request, TASK_KEY: ref.task_id}],
            TASK_KEY: ref.task_id,
            "environment": ref.env_id,
        }


def task_dataset(
    tasks: Iterable[TaskRef | str], harness: HarnessConfig | None = None, streaming: bool = False
) -> Any:
    """:func:`task_rows` as a ``datasets.Dataset`` (or an ``IterableDataset`` when
    ``streaming``: the tasks are then read as the trainer goes)."""
    from datasets import Dataset, IterableDataset

    if streaming:
        return IterableDataset.from_generator(lambda: iter(task_rows(tasks, harness)))
    return Dataset.from_list(list(task_rows(tasks, harness)))


# -- environment_factory -------------------------------------------------------------------------


class EnvfactoryToolEnv:
    """One rollout's environment for TRL. Subclasses made by :func:`tool_env_class` add one
    method per tool; this base holds the episode, the reset and the reward."""

    env_id: str = ""

    def __init__(self) -> None:
        self._episode: Any = None
        self.task_id: str | None = None

    def reset(self, **row: Any) -> str | None:
        """Start the row's task (``row['task_id']``). The prompt already holds the request; the
        return is what the episode's first observation adds to it (a web world's page), which
        TRL appends to the prompt's last message, or None where it adds nothing."""
        task_id = row.get(TASK_KEY)
        if not isinstance(task_id, str):
            raise ValueError(f"a row needs a {TASK_KEY!r} (env/split/difficulty/index)")
        env, task = load_task(task_id)
        if env.id != self.env_id:
            raise ValueError(f"{task_id} is not a task of {self.env_id}")
        if self._episode is not None:
            self._episode.close()
        self._episode = env.episode()
        first = str(self._episode.reset(task).content)
        self.task_id = task_id
        return beyond_request(task.public.instruction, first)

    def _act(self, action: ToolCall | Message) -> str:
        if self._episode is None:
            raise RuntimeError("reset the environment first")
        if self._episode.done:
            return "The conversation is over; no further actions are taken."
        return str(self._episode.step(action).content)

    def send_message(self, content: str) -> str:
        """Send a message to the user: ask for something only they know, or report the outcome
        (and any answer they asked for) when the request is handled.

        Args:
            content: The message to the user.

        Returns:
            The user's reply, or a note that the conversation has ended.
        """
        return self._act(Message(content=content, final=False))

    @property
    def verdict(self) -> Verdict:
        """The verifier's verdict on the episode so far (a property: not a tool)."""
        if self._episode is None:
            raise RuntimeError("reset the environment first")
        return self._episode.evaluate()  # type: ignore[no-any-return]

    def get_reward(self) -> float | None:
        """The verifier's reward for the episode so far (None when the environment failed:
        TRL leaves such a rollout out rather than scoring it 0)."""
        return self.verdict.reward


def beyond_request(instruction: str, first: str) -> str | None:
    """What ``first`` (an episode's first observation) adds to ``instruction`` (the request a
    row's prompt holds): the rest where it begins with the request, all of it on a new
    paragraph where it does not, None where the two are the same."""
    if first == instruction:
        return None
    return first[len(instruction) :] if first.startswith(instruction) else f"\n\n{first}"


def _annotation(schema: dict[str, Any]) -> Any:
    if schema.get("type") == "array":
        item = _JSON_TYPES.get(str(schema.get("items", {}).get("type")), str)
        return list[item]  # type: ignore[valid-type]
    return _JSON_TYPES.get(str(schema.get("type")), str)


def _docstring(fn: dict[str, Any]) -> str:
    params = fn.get("parameters", {}).get("properties", {})
    lines = [fn.get("description") or fn["name"].replace("_", " "), ""]
    if params:
        lines.append("Args:")
        for name, spec in params.items():
            text = " ".join(str(spec.get("description") or name.replace("_", " ")).split())
            if "enum" in spec:
                text += f" (choices: {json.dumps(list(spec['enum']))})"
            lines.append(f"    {name}: {text}")
        lines.append("")
    lines += ["Returns:", "    The tool's result, or an error message."]
    return "\n".join(lines)


def _tool_method(fn: dict[str, Any]) -> Callable[..., str]:
    name = fn["name"]
    params = fn.get("parameters", {})
    required = set(params.get("required", []))
    sig = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    ordered = sorted(params.get("properties", {}).items(), key=lambda kv: kv[0] not in required)
    for arg, spec in ordered:
        kind = _annotation(spec)
        default = inspect.Parameter.empty if arg in required else None
        if arg not in required:
            kind = kind | None
        annotations[arg] = kind
        sig.append(
            inspect.Parameter(
                arg, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=kind
            )
        )

    def method(self: EnvfactoryToolEnv, *args: Any, **kwargs: Any) -> str:
        bound = method.__signature__.bind(self, *args, **kwargs)  # type: ignore[attr-defined]
        arguments = {k: v for k, v in bound.arguments.items() if k != "self" and v is not None}
        return self._act(ToolCall(tool=name, arguments=arguments))

    method.__name__ = method.__qualname__ = name
    method.__doc__ = _docstring(fn)
    method.__annotations__ = {**annotations, "return": str}
    method.__signature__ = inspect.Signature(sig, return_annotation=str)  # type: ignore[attr-defined]
    return method


_CLASSES: dict[str, type[EnvfactoryToolEnv]] = {}


def tool_env_class(env_id: str) -> type[EnvfactoryToolEnv]:
    """The ``environment_factory`` class of an environment: one method per tool."""
    cls = _CLASSES.get(env_id)
    if cls is None:
        namespace: dict[str, Any] = {"env_id": env_id, "__module__": __name__}
        for schema in make(env_id).tools("openai"):
            fn = schema["function"]
            if fn["name"] in namespace or hasattr(EnvfactoryToolEnv, fn["name"]):
                raise ValueError(f"{env_id}: tool {fn['name']!r} clashes with the environment API")
            namespace[fn["name"]] = _tool_method(fn)
        title = "".join(p.title() for p in env_id.replace("-", "_").split("_"))
        cls = _CLASSES[env_id] = type(f"{title}ToolEnv", (EnvfactoryToolEnv,), namespace)
    return cls


def environment_factory(
    env_ids: str | list[str],
) -> type[EnvfactoryToolEnv] | dict[str, type[EnvfactoryToolEnv]]:
    """What to pass as ``GRPOTrainer(environment_factory=...)``: the class of one environment,
    or a dict by environment id (rows then route by their ``environment`` field)."""
    if isinstance(env_ids, str):
        return tool_env_class(env_ids)
    return {env_id: tool_env_class(env_id) for env_id in env_ids}


# -- rollout_func --------------------------------------------------------------------------------


def prompt_task(prompt: Any) -> str:
    """The task address carried by a row's prompt (see :func:`task_rows`)."""
    if isinstance(prompt, list):
        for message in prompt:
            if isinstance(message, dict) and isinstance(message.get(TASK_KEY), str):
                return str(message[TASK_KEY])
    raise ValueError(
        f"the prompt names no task: build the rows with envfactory.integrations.trl.task_rows "
        f"(the request message carries {TASK_KEY!r})"
    )


def completion(record: EpisodeRecord) -> dict[str, Any]:
    """An episode as one GRPO sample: the first call's prompt, then everything after it
    (model output with ``env_mask`` 1, tool results and user replies with 0) and the sampler's
    logprobs. When the chat template rewrote history the episode spans several token rows;
    the first row is the sample and ``rows`` says how many there were."""
    seq = to_sequence(record)
    if not seq.rows:
        raise MissingTokens(f"{record.episode_id} made no model call ({record.status})")
    row = seq.rows[0]
    prompt_ids = record.calls[row.calls[0]].prompt_ids or []
    cut = len(prompt_ids)
    if row.logprobs is None:
        raise MissingTokens(f"{record.episode_id}: the server returned no logprobs")
    return {
        "prompt_ids": prompt_ids,
        "completion_ids": row.input_ids[cut:],
        "logprobs": row.logprobs[cut:],
        "env_mask": row.loss_mask[cut:],
        "rows": len(seq.rows),
    }


PolicySource = RolloutPolicy | Callable[[Any], RolloutPolicy] | None


class EnvfactoryRollout:
    """``GRPOTrainer(rollout_func=EnvfactoryRollout(...))``: each prompt of the batch (TRL
    repeats a row ``num_generations`` times) becomes one episode of its task, played by the
    rollout engine; the copies of a row form one group.

    ``policy``: a rollout policy (an :class:`~envfactory.policies.openai.OpenAIPolicy` in front
    of a vLLM server that returns token ids), a function of the trainer that builds one, or
    None for the trainer's own model in-process
    (:class:`~envfactory.integrations.local_model.TransformersPolicy`, with tool calls as
    text). Every episode goes
    to ``store`` when given. Returns ``envfactory_reward`` and ``envfactory_status`` beside
    the token fields: :func:`verdict_reward` reads the reward."""

    def __init__(
        self,
        policy: PolicySource = None,
        *,
        harness: HarnessConfig | None = None,
        config: EngineConfig | None = None,
        store: TrajectoryStore | None = None,
    ) -> None:
        self.policy = policy
        self.harness = harness
        self.config = config or EngineConfig()
        self.store = store
        self.calls = 0
        self.records: list[EpisodeRecord] = []

    def _policy(self, trainer: Any) -> RolloutPolicy:
        if self.policy is None:
            from envfactory.integrations.local_model import TransformersPolicy

            return TransformersPolicy(trainer.model, trainer.processing_class)
        if callable(self.policy) and not hasattr(self.policy, "session"):
            return self.policy(trainer)
        return self.policy  # type: ignore[return-value]

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        self.calls += 1
        tasks = [prompt_task(p) for p in prompts]
        by_size: dict[int, list[TaskRef]] = defaultdict(list)
        counts: dict[str, int] = defaultdict(int)
        for t in tasks:
            counts[t] += 1
        for t, n in counts.items():
            by_size[n].append(TaskRef.parse(t))
        records = asyncio.run(self._run(by_size, trainer))
        out: dict[str, list[Any]] = defaultdict(list)
        for t in tasks:
            rec = records[t].pop(0)
            for key, value in completion(rec).items():
                out[key].append(value)
            out["envfactory_reward"].append(rec.reward)
            out["envfactory_status"].append(rec.status)
        return dict(out)

    async def _run(
        self, by_size: dict[int, list[TaskRef]], trainer: Any
    ) -> dict[str, list[EpisodeRecord]]:
        tag = f"trl-{self.calls}" if self.store is not None else ""  # unique ids in the store
        found: dict[str, list[EpisodeRecord]] = defaultdict(list)
        for size, refs in by_size.items():
            config = self.config.model_copy(update={"group_size": size})
            harness = self.harness
            if harness is None and self.policy is None:
                harness = HarnessConfig(tool_format="text")
            engine = RolloutEngine(
                self._policy(trainer), harness=harness, config=config, store=self.store
            )
            tagged = [TaskRef(r.env_id, r.split, r.difficulty, r.index, tag) for r in refs]
            try:
                await engine.run(tagged)
            finally:
                await engine.aclose()
            kept = [r for r in engine.records if r.status != "infra_error"]
            for rec in sorted(kept, key=lambda r: (r.group_id, r.sample_index)):
                found[rec.task_id].append(rec)
            faults = [r.error for r in engine.records if r.error] + engine.stats.errors
            for ref in refs:
                if len(found[ref.task_id]) < size:
                    raise RuntimeError(
                        f"{ref.task_id}: {len(found[ref.task_id])} of {size} episodes finished "
                        f"(faults are not scored); first fault: {faults[0] if faults else None}"
                    )
            self.records += kept
        return found


def verdict_reward(
    completions: list[Any], envfactory_reward: list[float | None], **kwargs: Any
) -> list[float | None]:
    """A GRPOTrainer reward function: the verifier's reward of each rollout's episode."""
    return list(envfactory_reward)
