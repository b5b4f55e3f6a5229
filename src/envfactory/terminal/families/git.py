"""A git repository operation: commit, branch, tag, revert or cherry-pick."""

from __future__ import annotations

import json
import random

from envfactory.tasks.types import PlanStep
from envfactory.terminal.checks import exec_json
from envfactory.terminal.family import WORDS, Draft, Family, q, run, write
from envfactory.terminal.gitobj import Repo

# Runs in a check sandbox over a copy of the final files: git answers, as one JSON line.
QUERY = """
import json, subprocess, sys
out = {}
for key, args in json.load(open(sys.argv[1])).items():
    p = subprocess.run(["git", "-C", "repo", *args], capture_output=True, text=True)
    out[key] = p.stdout.strip() if p.returncode == 0 else "exit %d" % p.returncode
print("RESULT " + json.dumps(out))
"""
Q_PATH = ".check/git_query.py"
A_PATH = ".check/git_args.json"


def _lines(rng: random.Random, n: int) -> str:
    return "".join(f"{rng.choice(WORDS)} = {rng.randint(1, 99)}\n" for _ in range(n))


class GitOperation(Family):
    id = "term-git"
    name = "A git repository operation"
    description = "Commit, branch, tag, revert or cherry-pick in a git repository."

    def generate(self, rng: random.Random, difficulty: int) -> Draft:
        repo = Repo()
        names = rng.sample(WORDS, 6)
        files = {f"src/{n}.txt": _lines(rng, 3) for n in names[:3]}
        files["README.md"] = f"# {names[3]}\n"
        history = []
        head = None
        for i in range(2 + difficulty):
            path = rng.choice(sorted(files))
            files[path] += _lines(rng, 1)
            msg = f"Update {path.split('/')[-1]} for {rng.choice(WORDS)} ({i + 1})"
            head = repo.commit(files, msg, [head] if head else [])
            history.append((head, msg, dict(files)))
        assert head is not None
        repo.refs["heads/main"] = head
        worktree = dict(files)
        checks: dict[str, tuple[list[str], str]] = {}
        kept: set[str] = set()  # checks that already hold at the start: gates
        gold: list[PlanStep]
        if difficulty == 1:
            path = rng.choice(sorted(files))
            worktree[path] += _lines(rng, 2)
            msg = f"Record {rng.choice(WORDS)} settings"
            instruction = (
                f"In the git repository /work/repo, commit all the current changes on main "
                f"with the message: {msg}"
            )
            checks = {
                "message": (["log", "-1", "--format=%s"], msg),
                "content": (["show", f"HEAD:{path}"], worktree[path].strip()),
                "parent": (["rev-parse", "HEAD^"], head),
                "clean": (["status", "--porcelain"], ""),
            }
            gold = [run(f"cd repo && git add -A && git commit -q -m {q(msg)}")]
        elif difficulty == 2:
            branch = f"feature/{names[4]}"
            note = f"notes/{names[5]}.md"
            text = f"# {names[5]}\n\n{_lines(rng, 2)}"
            instruction = (
                f"In /work/repo, create the branch {branch} from main, and commit on it a new "
                f"file {note} holding exactly:\n{text}\nmain must not move."
            )
            checks = {
                "main": (["rev-parse", "main"], head),
                "note": (["show", f"{branch}:{note}"], text.strip()),
                "parent": (["rev-parse", f"{branch}^"], head),
            }
            kept = {"main"}
            gold = [
                run(f"cd repo && git checkout -q -b {q(branch)}"),
                write(f"repo/{note}", text),
                run(f"cd repo && git add {q(note)} && git commit -q -m 'Add note'"),
            ]
        elif difficulty == 3:
            sha, msg, _ = rng.choice(history[:-1])
            tag = f"v1.{rng.randint(0, 9)}.{rng.randint(0, 9)}"
            instruction = (
                f"In /work/repo, tag the commit whose message is '{msg}' as {tag}. Do not "
                "change any branch."
            )
            checks = {
                "tag": (["rev-parse", f"{tag}^{{commit}}"], sha),
                "main": (["rev-parse", "main"], head),
            }
            kept = {"main"}
            gold = [run(f"cd repo && git tag {q(tag)} $(git log --format=%H -F --grep={q(msg)})")]
        elif difficulty == 4:
            bad_path = f"src/{names[0]}.txt"
            before = files[bad_path]
            files[bad_path] = before + "debug = true\n"
            bad = repo.commit(files, "Enable debug output", [head])
            other = sorted(p for p in files if p != bad_path)[0]
            files[other] += _lines(rng, 1)
            head = repo.commit(files, f"Tidy {other.split('/')[-1]}", [bad])
            repo.refs["heads/main"] = head
            worktree = dict(files)
            instruction = (
                "In /work/repo, the commit 'Enable debug output' was a mistake. Undo it with a "
                "new commit on main (keep the history: do not rewrite it)."
            )
            checks = {
                "undone": (["show", f"HEAD:{bad_path}"], before.strip()),
                "kept": (["show", f"HEAD:{other}"], files[other].strip()),
                "history": (["merge-base", "--is-ancestor", head, "HEAD"], ""),
                "clean": (["status", "--porcelain"], ""),
            }
            kept = {"kept", "history", "clean"}
            gold = [run(f"cd repo && git revert --no-edit {bad}")]
        else:
            fix_path, other = f"src/{names[1]}.txt", f"src/{names[2]}.txt"
            side = dict(files)
            side[other] += "experiment = on\n"
            c1 = repo.commit(side, "Try an experiment", [head])
            side[fix_path] = side[fix_path].replace(" = ", " := ", 1)
            fix_msg = f"Fix the {names[1]} syntax"
            c2 = repo.commit(side, fix_msg, [c1])
            repo.refs["heads/hotfix"] = c2
            fixed = files[fix_path].replace(" = ", " := ", 1)
            instruction = (
                f"In /work/repo, bring only the commit '{fix_msg}' from the branch hotfix onto "
                "main (as one new commit on main); leave hotfix as it is."
            )
            checks = {
                "fixed": (["show", f"main:{fix_path}"], fixed.strip()),
                "not_experiment": (["show", f"main:{other}"], files[other].strip()),
                "parent": (["rev-parse", "main^"], head),
                "hotfix": (["rev-parse", "hotfix"], c2),
            }
            kept = {"not_experiment", "hotfix"}
            gold = [run(f"cd repo && git checkout -q main && git cherry-pick {c2}")]
        args = json.dumps({k: a for k, (a, _) in checks.items()})
        inject = {Q_PATH: QUERY, A_PATH: args}
        command = f"python3 {Q_PATH} {A_PATH}"
        tests = [
            exec_json(f"git {key}", command, inject, key, want, gate=key in kept)
            for key, (_, want) in checks.items()
        ]
        return Draft(
            instruction=instruction,
            files=repo.files("main", worktree),
            gold=gold,
            tests=tests,
            knobs={"commits": len(history)},
            goals=["git"],
        )
