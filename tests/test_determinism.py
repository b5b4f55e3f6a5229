"""The same (env, split, difficulty, index) is the same task in every process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import envfactory

SCRIPT = """
import json, sys, envfactory
out = []
for env_id in envfactory.list_envs():
    env = envfactory.make(env_id)
    if env.kind == "campaign":
        continue  # runs of a db world's tasks: tests/campaign/test_campaign_world.py
    for split in env.splits:
        for d in env.difficulties:
            for i in (0, 7):
                t = env.task(split, d, i)
                out.append([t.public.model_dump_json(), t.initial_hash, t.hidden.fingerprint])
sys.stdout.write(json.dumps(out))
"""


def _run(hash_seed: str) -> list[list[str]]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True
    )
    result: list[list[str]] = json.loads(done.stdout)
    return result


def test_tasks_are_byte_identical_across_processes() -> None:
    first, second = _run("1"), _run("987654")
    assert first == second
    campaigns = sum(e.startswith("campaign-") for e in envfactory.list_envs())
    assert len(first) >= (len(envfactory.list_envs()) - campaigns) * 3 * 2
