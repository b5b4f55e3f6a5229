"""A trivial world for ``envfactory bench serve``: one ``echo`` tool and no state, through
our contracts.

It measures what serving costs on its own, against OpenEnv's server hosting the same echo
(``bench_peer``). ``python -m envfactory.serving.bench_echo --port P ...`` serves it next to
the worlds named by ``--envs``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Literal

from envfactory.contract.actions import Message, Observation, ToolCall, parse_action
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import EnvInfo, Environment
from envfactory.contract.episode import Episode
from envfactory.contract.tasks import HiddenTask, PlanStep, PublicTask, Split, Task
from envfactory.contract.verdict import Verdict
from envfactory.registry import make
from envfactory.serving.config import ServeConfig
from envfactory.serving.server import serve

ECHO_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
    "additionalProperties": False,
}


class EchoEpisode(Episode):
    def __init__(self, config: EpisodeConfig) -> None:
        self.config = config

    def reset(self, task: Task) -> Observation:
        self.task, self.done, self.status, self.steps = task, False, "truncated", 0
        return Observation(kind="task", content=task.public.instruction)

    def step(self, action: Any) -> Observation:
        parsed = parse_action(action)
        self.steps += 1
        if isinstance(parsed, Message) and parsed.final:
            self.done, self.status = True, "completed"
            return Observation(kind="end", content="bye", done=True)
        if isinstance(parsed, Message):
            return Observation(kind="user", content="ok")
        if isinstance(parsed, ToolCall):
            body = json.dumps({"tool": parsed.tool, "args": parsed.arguments})
            return Observation(kind="tool_result", content=body)
        return Observation(kind="tool_error", content=str(parsed))

    def evaluate(self) -> Verdict:
        return Verdict(reward=float(self.done), status=self.status, items=[], state_hash="0")

    def state_hash(self) -> str:
        return "0"

    def close(self) -> None:
        return None


class EchoEnvironment(Environment):
    id = "echo"
    kind = "echo"
    blocking = False

    @property
    def difficulties(self) -> list[int]:
        return [1]

    def task(self, split: Split = "train", difficulty: int = 1, index: int = 0) -> Task:
        task_id = f"echo/{split}/{difficulty}/{index}"
        public = PublicTask(
            task_id=task_id,
            env_id="echo",
            split=split,
            difficulty=difficulty,
            instruction="Echo something.",
            persona="You echo.",
            rules=[],
            tools=["echo"],
        )
        step = PlanStep(tool="echo", arguments={"text": "hello"})
        hidden = HiddenTask(
            task_id=task_id, goals=[], gold_plan=[step], target=[], knobs={}, fingerprint="echo"
        )
        return Task(public=public, hidden=hidden, initial_hash="0")

    def episode(self, config: EpisodeConfig | None = None) -> EchoEpisode:
        return EchoEpisode(config or EpisodeConfig())

    def tools(self, fmt: Literal["openai", "mcp"] = "openai") -> list[dict[str, Any]]:
        if fmt == "mcp":
            return [{"name": "echo", "description": "Echo.", "inputSchema": ECHO_SCHEMA}]
        return [
            {
                "type": "function",
                "function": {"name": "echo", "description": "Echo.", "parameters": ECHO_SCHEMA},
            }
        ]

    def info(self) -> EnvInfo:
        return EnvInfo(
            id="echo",
            kind="echo",
            name="echo",
            description="Echoes tool calls.",
            tools=1,
            tool_names=["echo"],
            difficulties=[1],
            tables=0,
            rows=0,
            rules=0,
            goal_templates=0,
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--envs", default="retail")
    parser.add_argument("--max-sessions", type=int, default=4096)
    args = parser.parse_args()
    envs: dict[str, Environment] = {e: make(e) for e in args.envs.split(",") if e}
    envs["echo"] = EchoEnvironment()
    config = ServeConfig(
        envs=tuple(envs),
        max_sessions=args.max_sessions,
        max_steps=10**9,
    )
    serve(config, port=args.port, log_level="error", envs=envs)


if __name__ == "__main__":
    main()
