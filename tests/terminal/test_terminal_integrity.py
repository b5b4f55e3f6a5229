"""Completion tests cannot be passed without the work, and every writable place is capped.

Each adversary below plays a whole episode through the public tools and must score 0: it
stubs build files, deletes inputs, or plants files that shadow what a check would run
(modules, site hooks, tools on a path, git configuration), but never does the task.
"""

from __future__ import annotations

import pytest

import envfactory
from envfactory.contract.actions import Message, ToolCall
from envfactory.terminal.builtin import FAMILIES
from envfactory.terminal.checks import CompletionTest, judge
from envfactory.terminal.environment import TerminalEnvironment
from envfactory.terminal.fs import Entry
from envfactory.terminal.sandbox import Limits, Sandbox

# A module that, wherever it is imported or run, forges every answer a check could want.
FORGE = (
    "import json, os, sys\n"
    "print('RESULT ' + json.dumps({'unit_tests': True}))\n"
    "sys.stdout.flush(); os._exit(0)\n"
)
SHADOWED = ("subprocess", "json", "unittest", "io", "configparser", "tomllib", "sitecustomize")
PLANTS = [
    f"mkdir -p .check tools bin && for m in {' '.join(SHADOWED)} usercustomize; do "
    "for d in . .check tools; do cp /work/.forge.py $d/$m.py; done; done",
    "for t in git make python3 python awk; do printf '#!/bin/sh\\nexit 0\\n' > bin/$t; "
    "chmod +x bin/$t; done",
    "printf '[core]\\n\\tfsmonitor = true\\n[alias]\\n\\tlog = !true\\n' > .gitconfig",
    "for r in */.git; do printf '[core]\\n\\tfsmonitor = true\\n' >> $r/config; done",
]


def _play(env_id: str, difficulty: int, commands: list[str], files: dict[str, str]) -> float:
    return _play_index(env_id, difficulty, 0, commands, files)


def _play_index(
    env_id: str, difficulty: int, index: int, commands: list[str], files: dict[str, str]
) -> float:
    """The reward of an episode that writes ``files``, runs ``commands`` and stops."""
    env = envfactory.make(env_id)
    task = env.task("train", difficulty, index)
    episode = env.episode()
    try:
        episode.reset(task)
        for path, text in files.items():
            episode.step(ToolCall(tool="write_file", arguments={"path": path, "content": text}))
        for command in commands:
            episode.step(ToolCall(tool="run_command", arguments={"command": command}))
        episode.step(Message(content="done", final=True))
        reward = episode.evaluate().reward
        assert reward is not None
        return reward
    finally:
        episode.close()


@pytest.mark.parametrize("env_id", [f.id for f in FAMILIES])
def test_shadowing_what_the_checks_run_earns_nothing(env_id: str) -> None:
    """A planted `.check/subprocess.py` made every term-git difficulty-1 task score 1.0."""
    for difficulty in (1, 5):
        assert _play(env_id, difficulty, PLANTS, {".forge.py": FORGE}) == 0.0


# A `subprocess` that answers the git check's queries as if the commit had been made.
FAKE_SUBPROCESS = """
import os
MESSAGE = {message!r}
class Done:
    returncode, stderr = 0, ""
def run(cmd, **kwargs):
    args = [a for a in cmd if a in ("log", "show", "rev-parse", "status") or ":" in a]
    root = os.path.abspath({root!r})
    done = Done()
    if args[0] == "log":
        done.stdout = MESSAGE
    elif args[0] == "show":
        done.stdout = open(os.path.join(root, args[1].split(":", 1)[1])).read()
    elif args[0] == "rev-parse":
        done.stdout = open(os.path.join(root, ".git/refs/heads/main")).read()
    else:
        done.stdout = ""
    return done
"""


def test_a_planted_module_cannot_answer_for_git() -> None:
    """A planted `.check/subprocess.py` scored 1.0 on 20/20 term-git difficulty-1 tasks
    with no commit made."""
    env = envfactory.make("term-git")
    for index in range(3):
        instruction = env.task("train", 1, index).public.instruction
        root = instruction.split("/work/", 1)[1].split(",", 1)[0]
        message = instruction.rsplit("with the message: ", 1)[1]
        fake = FAKE_SUBPROCESS.format(message=message, root=root)
        planted = {f"{d}subprocess.py": fake for d in ("", ".check/", f"{root}/")}
        assert _play_index(env.id, 1, index, [], planted) == 0.0


def test_deleting_the_repository_is_not_a_clean_work_tree() -> None:
    """Emptying the repository (the audit's terminal_delete: every file, .git's included)
    passed "the working tree is clean": 0.25 on every term-git difficulty-1 task."""
    env = envfactory.make("term-git")
    for index in range(3):
        instruction = env.task("train", 1, index).public.instruction
        root = instruction.split("/work/", 1)[1].split(",", 1)[0]
        for wipe in (f"find {root} -type f -delete", f"rm -rf {root}"):
            assert _play_index(env.id, 1, index, [wipe], {}) == 0.0, wipe


WIPES = ("find . -type f -delete", "find . -mindepth 1 -delete")


@pytest.mark.parametrize("env_id", [f.id for f in FAMILIES])
def test_no_check_passes_on_an_emptied_tree(env_id: str) -> None:
    """Every check fails when what it inspects is absent: after deleting every file (folders
    kept) or everything, no score item and no gate of the task holds. (A starter task that
    shows only write_file refuses the command, so one that shows run_command is taken.)"""
    env = envfactory.make(env_id)
    for difficulty in env.difficulties:
        tasks = env.tasks("train", difficulty, 20)
        task = next((t for t in tasks if "run_command" in t.public.tools), tasks[0])
        for wipe in WIPES:
            episode = env.episode()
            try:
                episode.reset(task)
                episode.step(ToolCall(tool="run_command", arguments={"command": wipe}))
                episode.step(Message(content="done", final=True))
                items = episode.evaluate().items
            finally:
                episode.close()
            held = [i.name for i in items if i.score > 0 and i.name != "disk_quota"]
            assert not held, (difficulty, wipe, held)


def test_an_expected_folder_must_exist() -> None:
    """A folder's file set is not "as required" when the folder is gone, even if it should
    hold no files."""
    test = CompletionTest(name="out", kind="dir_files", args={"dir": "out", "files": {}})
    assert judge(test, {}, None) == (False, "out/ is missing")
    assert judge(test, {"out": Entry("dir", 0o755)}, None)[0]


def test_a_makefile_of_empty_rules_builds_nothing() -> None:
    """`make -q` on empty rules says there is nothing left to do (it scored 0.45)."""
    stub = "all:\n\t@true\n%:\n\t@true\nclean:\n\trm -rf build work stage out dist reports\n"
    for difficulty in (1, 3, 5):
        assert _play("term-make-pipeline", difficulty, [], {"Makefile": stub}) == 0.0


def test_deleting_the_sources_is_not_moving_them() -> None:
    """Deleting the inbox passed "source emptied" (it scored 0.20)."""
    env = envfactory.make("term-organize-files")
    for difficulty in (1, 3, 5):
        task = env.task("train", difficulty, 0)
        src = task.public.instruction.split("The folder /work/", 1)[1].split(" ", 1)[0]
        keep = "-not -name '*.keep' -not -name POLICY.txt"
        assert _play(env.id, difficulty, [f"find {src} -type f {keep} -delete"], {}) == 0.0


REPLAYED = ["term-make-pipeline", "term-permissions", "term-log-report", "term-git"]


@pytest.mark.parametrize("env_id", REPLAYED)
def test_a_train_plan_replayed_solves_no_held_out_task(env_id: str) -> None:
    """With a few fixed folder names, the nearest train task's Makefile, chmods, analysis
    script or commit named a test task's folders: replayed on these 25 test tasks, it
    solved 4 make tasks, earned 1/3 on 2 permission tasks, 1.0 and 0.5 on 2 log reports
    and 0.75 on a git commit (wrong message, right content)."""
    from envfactory.episode.runner import run_episode
    from envfactory.policies.exploits import ReplayTrain

    env = envfactory.make(env_id)
    replay = ReplayTrain(env)
    rewards = {}
    for difficulty in env.difficulties:
        for index in range(5):
            task = env.task("test", difficulty, index)
            episode = env.episode()
            try:
                rewards[task.task_id] = run_episode(env, task, replay, episode).reward or 0.0
            finally:
                episode.close()
    assert not {t: r for t, r in rewards.items() if r > 0}


def test_one_mode_for_every_file_fixes_no_rule() -> None:
    """A blanket `chmod 755` on every file passed the rules wanting 755 (mean 0.19)."""
    for command in ("find . -type f -exec chmod 755 {} +", "chmod -R o-w ."):
        for difficulty in (1, 4):
            assert _play("term-permissions", difficulty, [command], {}) == 0.0


def test_every_writable_place_is_capped() -> None:
    """/dev was an uncapped tmpfs: one command wrote 101 MB to /dev/shm."""
    limits = Limits(tmp_mb=4)
    with Sandbox(limits) as box:
        for place in ("/tmp", "/dev/shm"):
            r = box.run(
                f"head -c 6000000 /dev/zero > {place}/big 2>/dev/null; "
                f"echo $?; stat -c %s {place}/big"
            )
            code, size = r.output.split()
            assert code != "0" and int(size) <= 4 << 20, (place, r.output)
        for place in ("/dev", "/", "/etc", "/usr", "/dev/pts"):
            r = box.run(f"echo x > {place}/f && echo wrote")
            assert "wrote" not in r.output, place


def test_isolated_checks_still_pass_the_gold_plan() -> None:
    """The isolated check interpreter and git query accept real work (oracle scores 1.0)."""
    from envfactory.episode.runner import run_episode
    from envfactory.policies.scripted import Oracle

    for env_id in ("term-git", "term-python-fix", "term-config-edit", "term-make-pipeline"):
        env = envfactory.make(env_id)
        assert isinstance(env, TerminalEnvironment)
        for difficulty in (1, 5):
            task = env.task("train", difficulty, 1)
            episode = env.episode()
            try:
                assert run_episode(env, task, Oracle(), episode).reward == 1.0, env_id
            finally:
                episode.close()
