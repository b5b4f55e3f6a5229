"""Permission fixes: make scripts executable, lock secrets down, remove world-writable bits."""

from __future__ import annotations

import random
from dataclasses import dataclass

from envfactory.terminal.checks import CompletionTest
from envfactory.terminal.family import WORDS, Draft, Family, read, run, write
from envfactory.terminal.fs import FileSpec, file


@dataclass(frozen=True)
class Rule:
    """Files ``folder/*.ext`` (or the folder itself) must get ``modes``; ``fix`` is the gold."""

    folder: str
    ext: str
    start: tuple[int, ...]
    modes: tuple[int, ...]
    text: str  # with {dir} and {mode}
    relative: bool = False  # "remove only the world-write bit"


RULES = (
    Rule(
        "bin",
        "sh",
        (0o644, 0o600, 0o664),
        (0o755, 0o750, 0o700),
        "every .sh script in {dir} is executable: mode {mode}",
    ),
    Rule(
        "secrets",
        "key",
        (0o644, 0o666, 0o640),
        (0o600, 0o400),
        "every .key file in {dir} is readable by its owner only: mode {mode}",
    ),
    Rule(
        "config",
        "conf",
        (0o666, 0o600, 0o777),
        (0o644, 0o640),
        "config files (.conf) in {dir} have mode {mode}",
    ),
    Rule(
        "logs",
        "log",
        (0o666, 0o646, 0o662, 0o777),
        (),
        "no .log file in {dir} is writable by others (remove only that bit)",
        relative=True,
    ),
    Rule(
        "data",
        "csv",
        (0o644, 0o664, 0o755),
        (0o444,),
        "data files (.csv) in {dir} are read-only for everyone: mode {mode}",
    ),
    Rule(
        "hooks",
        "py",
        (0o600, 0o644, 0o666),
        (0o755, 0o750),
        "the .py hooks in {dir} are executable: mode {mode}",
    ),
    Rule(
        "certs",
        "pem",
        (0o666, 0o600, 0o755),
        (0o644, 0o444),
        "certificates (.pem) in {dir} have mode {mode}",
    ),
)


# Files no rule is about, in modes no one blanket change keeps (one mode for every file,
# or dropping everyone's write bit): they must keep their modes.
BYSTANDERS = {
    "README.txt": 0o644,
    "tools/run.py": 0o755,
    "shared/board.txt": 0o666,
    "private/notes.txt": 0o600,
}


class Permissions(Family):
    id = "term-permissions"
    name = "Permission fixes"
    description = "Repair the permission bits of a deployment tree by a list of rules."

    def generate(self, rng: random.Random, difficulty: int) -> Draft:
        # A root of two words: with one, a train task's plan (replayed) often named the same
        # tree and fixed the rules the two tasks share.
        kind = rng.choice(["deploy", "release", "srv", "site", "stack"])
        root = "-".join([kind, *rng.sample(WORDS, 2)])
        chosen = rng.sample(RULES, min(difficulty + 1, len(RULES)))
        files: list[FileSpec] = [
            file(f"{root}/{path}", f"{path} of the {root} tree.\n", mode)
            for path, mode in BYSTANDERS.items()
        ]
        asks, tests = [], []
        gold = [run(f"ls -lR {root}")]
        policy = f"{root}/SECURITY.txt"
        for i, rule in enumerate(chosen):
            folder = f"{root}/{rule.folder}"
            mode = rng.choice(rule.modes) if rule.modes else 0
            want = {}
            for name in rng.sample(WORDS, rng.randint(1, 2 + difficulty // 2)):
                path = f"{folder}/{name}.{rule.ext}"
                start = rng.choice(rule.start)
                files.append(file(path, f"{name}\n", start))
                want[path] = start & ~0o002 if rule.relative else mode
            text = rule.text.format(dir=f"{folder}/", mode=f"{mode:o}")
            if difficulty >= 2 and i == 0:
                files.append(file(policy, f"Security policy: {text}.\n"))
                asks.append(f"the rule in {policy}")
                gold.append(read(policy))
            else:
                asks.append(text)
            fix = "o-w" if rule.relative else f"{mode:o}"
            gold.append(run(f"chmod {fix} {folder}/*.{rule.ext}"))
            tests.append(
                CompletionTest(name=f"{rule.folder} modes", kind="modes", args={"modes": want})
            )
        if difficulty >= 3:
            script = f"{root}/bin/{rng.choice(WORDS)}-start.sh"
            body = f"echo starting {root}\n"
            files.append(file(script, body, 0o644))
            asks.append(
                f"{script} lacks its first line `#!/bin/sh`: add it, and make the "
                "script executable (755)"
            )
            fixed = "#!/bin/sh\n" + body
            gold += [write(script, fixed), run(f"chmod 755 {script}")]
            tests.append(
                CompletionTest(name="start script", kind="files", args={"files": {script: fixed}})
            )
            tests.append(
                CompletionTest(
                    name="start script mode", kind="modes", args={"modes": {script: 0o755}}
                )
            )
        ruled = {path for t in tests if t.kind == "modes" for path in t.args["modes"]}
        kept = {f.path: f.mode for f in files if f.path not in ruled}
        tests.append(
            CompletionTest(name="other files kept", kind="modes", args={"modes": kept}, gate=True)
        )
        instruction = (
            f"Fix the permissions of the tree in /work/{root}: "
            + "; ".join(asks)
            + ". Change nothing else."
        )
        return Draft(
            instruction=instruction,
            files=files,
            gold=gold,
            tests=tests,
            knobs={"rules": len(chosen), "files": len(files)},
            goals=["permissions"],
        )
