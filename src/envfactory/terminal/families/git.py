"""A git repository operation: commit, branch, tag, revert or cherry-pick."""

from __future__ import annotations

import json
import random

from envfactory.terminal.checks import exec_json, python_check
from envfactory.terminal.family import WORDS, Draft, Family, q, read, run, write
from envfactory.terminal.gitobj import Repo

# Runs in a check sandbox over a copy of the final files: git answers, as one JSON line.
# git reads only the repository's objects, refs and index, copied into a fresh git directory:
# no configuration, hooks, replace refs, grafts or home files of the agent's can run code or
# change an answer. Without a repository whose HEAD names a commit every answer is "no
# repository": an empty work tree beside an emptied .git is not a clean one.
QUERY = """
import json, os, shutil, subprocess, sys, tempfile
queries = json.loads(sys.argv[1])
work = os.path.abspath(sys.argv[2])
src = os.path.join(work, ".git")

def absent():
    print("RESULT " + json.dumps({key: "no repository" for key in queries}))
    sys.exit(0)

def real(name, test):
    path = os.path.join(src, name)
    return test(path) and not os.path.islink(path)

if not (real("objects", os.path.isdir) and real("refs", os.path.isdir)):
    absent()
if not real("HEAD", os.path.isfile):
    absent()
fresh = tempfile.mkdtemp()
subprocess.run(["git", "init", "-q", fresh], check=True, env={"PATH": "/usr/bin:/bin"})
git_dir = os.path.join(fresh, ".git")
for name in ("objects", "refs"):
    shutil.rmtree(os.path.join(git_dir, name))
    shutil.copytree(os.path.join(src, name), os.path.join(git_dir, name), symlinks=True)
for name in ("HEAD", "packed-refs", "index"):
    if real(name, os.path.isfile):
        shutil.copyfile(os.path.join(src, name), os.path.join(git_dir, name))
env = {
    "PATH": "/usr/bin:/bin", "HOME": git_dir, "GIT_DIR": git_dir, "GIT_WORK_TREE": work,
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_ATTR_NOSYSTEM": "1", "GIT_OPTIONAL_LOCKS": "0",
}
safe = ["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"]
head = ["git", *safe, "rev-parse", "--verify", "-q", "HEAD^{commit}"]
if subprocess.run(head, capture_output=True, cwd=work, env=env).returncode != 0:
    absent()
out = {}
for key, args in queries.items():
    p = subprocess.run(["git", *safe, *args], capture_output=True, text=True, cwd=work, env=env)
    out[key] = p.stdout.strip() if p.returncode == 0 else "exit %d" % p.returncode
print("RESULT " + json.dumps(out))
"""
FILE_EXTS = ("txt", "cfg", "ini", "md", "conf")


def _lines(rng: random.Random, n: int) -> str:
    return "".join(f"{rng.choice(WORDS)} = {rng.randint(1, 99)}\n" for _ in range(n))


class GitOperation(Family):
    id = "term-git"
    name = "A git repository operation"
    description = "Commit, branch, tag, revert or cherry-pick in a git repository."

    def generate(self, rng: random.Random, difficulty: int) -> Draft:
        # A root of two words: with one, a train task's commit (replayed) often landed in a
        # held-out task's repository and passed its content checks.
        kind = rng.choice(["repo", "project", "site", "service"])
        root = "-".join([kind, *rng.sample(WORDS, 2)])
        repo = Repo(root)
        names = rng.sample(WORDS, 9)
        files = {
            f"{rng.choice(['src', 'conf', 'lib'])}/{n}.{rng.choice(FILE_EXTS)}": _lines(rng, 3)
            for n in names[:5]
        }
        files["README.md"] = f"# {names[5]}\n"
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
        shape: list[str] = []
        cd = f"cd {root} && "
        if difficulty == 1:
            path = rng.choice(sorted(files))
            worktree[path] += _lines(rng, 2)
            msg = f"Record {rng.choice(WORDS)} settings"
            instruction = (
                f"In the git repository /work/{root}, commit all the current changes on main "
                f"with the message: {msg}"
            )
            checks = {
                "message": (["log", "-1", "--format=%s"], msg),
                "content": (["show", f"HEAD:{path}"], worktree[path].strip()),
                "parent": (["rev-parse", "HEAD^"], head),
                "clean": (["status", "--porcelain"], ""),
            }
            gold = [
                run(cd + "git status"),
                read(f"{root}/{path}"),
                run(cd + f"git add -A && git commit -q -m {q(msg)}"),
            ]
        elif difficulty == 2:
            picked = rng.sample(history[:-1], rng.randint(1, 2))
            tags = rng.sample([f"v{a}.{b}.0" for a in range(1, 4) for b in range(10)], 2)
            asks = [
                f"the commit whose message is '{m}' as {t}"
                for (_, m, _), t in zip(picked, tags, strict=False)
            ]
            instruction = (
                f"In /work/{root}, tag " + " and ".join(asks) + ". Do not change any branch."
            )
            checks = {
                f"tag {t}": (["rev-parse", f"{t}^{{commit}}"], sha)
                for (sha, _, _), t in zip(picked, tags, strict=False)
            }
            checks["main"] = (["rev-parse", "main"], head)
            kept = {"main"}
            gold = [run(cd + "git log --oneline")]
            gold += [
                run(cd + f"git tag {q(t)} $(git log --format=%H -F --grep={q(m)})")
                for (_, m, _), t in zip(picked, tags, strict=False)
            ]
            gold.append(run(cd + "git tag -n"))
        elif difficulty == 3:
            bad_paths = rng.sample(sorted(files), 3)
            before = {p: files[p] for p in bad_paths}
            bads, bad_msgs = [], []
            for p in bad_paths[:2]:
                files[p] = files[p] + f"debug_{rng.choice(WORDS)} = true\n"
                bad_msgs.append(f"Enable {rng.choice(WORDS)} debug output in {p.split('/')[-1]}")
                head = repo.commit(files, bad_msgs[-1], [head])
                bads.append(head)
            other = bad_paths[2]
            files[other] += _lines(rng, 1)
            head = repo.commit(files, f"Tidy {other.split('/')[-1]}", [head])
            repo.refs["heads/main"] = head
            worktree = dict(files)
            instruction = (
                f"In /work/{root}, the commits '{bad_msgs[0]}' and '{bad_msgs[1]}' were "
                "mistakes. Undo them with new commits on main (keep the history: do not "
                "rewrite it)."
            )
            checks = {
                f"undone {p}": (["show", f"HEAD:{p}"], before[p].strip()) for p in bad_paths[:2]
            }
            checks |= {
                "kept": (["show", f"HEAD:{other}"], files[other].strip()),
                "history": (["merge-base", "--is-ancestor", head, "HEAD"], ""),
                "clean": (["status", "--porcelain"], ""),
            }
            kept = {"kept", "history", "clean"}
            gold = [run(cd + "git log --oneline")]
            gold += [run(cd + f"git revert --no-edit {b}") for b in reversed(bads)]
            gold.append(run(cd + "git status"))
        elif difficulty == 4:
            branch = f"feature/{names[6]}"
            note = f"notes/{names[7]}.md"
            text = f"# {names[7]}\n\n{_lines(rng, 2)}"
            instruction = (
                f"In /work/{root}, create the branch {branch} from main, and commit on it a "
                f"new file {note} holding exactly:\n{text}\nmain must not move."
            )
            checks = {
                "main": (["rev-parse", "main"], head),
                "note": (["show", f"{branch}:{note}"], text.strip()),
                "parent": (["rev-parse", f"{branch}^"], head),
            }
            kept = {"main"}
            gold = [
                run(cd + "git log --oneline -3"),
                run(cd + f"git checkout -q -b {q(branch)}"),
                write(f"{root}/{note}", text),
                run(cd + f"git add {q(note)} && git commit -q -m 'Add note'"),
            ]
        else:
            paths = rng.sample(sorted(p for p in files if p != "README.md"), 5)
            side, commits, fixes = dict(files), [], []
            n_fix = rng.randint(3, 4)
            kinds = ["fix"] * n_fix + ["try"] * rng.randint(1, 5 - n_fix)
            rng.shuffle(kinds)
            parent = head
            for kind, path in zip(kinds, paths, strict=False):
                if kind == "fix":
                    side[path] = side[path].replace(" = ", " := ", 1)
                    msg = f"Fix the {path.split('/')[-1]} syntax"
                else:
                    side[path] += f"experiment_{rng.choice(WORDS)} = on\n"
                    msg = f"Try an experiment in {path.split('/')[-1]}"
                parent = repo.commit(side, msg, [parent])
                commits.append((kind, path, parent))
                fixes += [parent] if kind == "fix" else []
                shape.append(f"{kind}:{path.rsplit('.', 1)[1]}")
            repo.refs["heads/hotfix"] = parent
            instruction = (
                f"In /work/{root}, bring the commits of the branch hotfix whose messages start "
                "with 'Fix' onto main, in their order (one new commit on main for each); leave "
                "hotfix as it is."
            )
            checks = {"parent": (["rev-parse", f"main~{len(fixes)}"], head)}
            for kind, path, _ in commits:
                key = f"{kind}:{path}"
                want = side[path] if kind == "fix" else files[path]
                checks[key] = (["show", f"main:{path}"], want.strip())
                if kind == "try":
                    kept.add(key)
            checks["hotfix"] = (["rev-parse", "hotfix"], parent)
            kept.add("hotfix")
            gold = [run(cd + "git log --oneline main..hotfix")]
            gold += [run(cd + f"git cherry-pick {c}") for c in fixes]
            gold.append(run(cd + "git log --oneline -5"))
        command = python_check(QUERY, json.dumps({k: a for k, (a, _) in checks.items()}), root)
        tests = [
            exec_json(f"git {key}", command, {}, key, want, gate=key in kept)
            for key, (_, want) in checks.items()
        ]
        return Draft(
            instruction=instruction,
            files=lambda: repo.files("main", worktree),
            gold=gold,
            tests=tests,
            knobs={"commits": len(history)},
            goals=["git"],
            shape=shape,
        )
