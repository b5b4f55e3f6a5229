"""Permission fixes: make scripts executable, lock secrets down, remove world-writable bits."""

from __future__ import annotations

import random

from envfactory.terminal.checks import CompletionTest
from envfactory.terminal.family import WORDS, Draft, Family, run
from envfactory.terminal.fs import FileSpec, file
from envfactory.terminal.fs import FileSpec as Spec


class Permissions(Family):
    id = "term-permissions"
    name = "Permission fixes"
    description = "Repair the permission bits of a deployment tree by a list of rules."

    def generate(self, rng: random.Random, difficulty: int) -> Draft:
        k = 1 + difficulty // 2
        names = rng.sample(WORDS, 5 * k + 4)
        files: list[FileSpec] = []
        rules: list[tuple[str, dict[str, int], str]] = []

        def add(path: str, mode: int, text: str = "") -> None:
            files.append(file(path, text or f"{path}\n", mode))

        scripts = [f"deploy/bin/{n}.sh" for n in names[:k]]
        for p in scripts:
            add(p, rng.choice([0o644, 0o600, 0o664]), "#!/bin/sh\necho ok\n")
        rules.append(
            (
                "every .sh script in deploy/bin is executable: mode 755",
                dict.fromkeys(scripts, 0o755),
                "chmod 755 deploy/bin/*.sh",
            )
        )
        if difficulty >= 2:
            keys = [f"deploy/secrets/{n}.key" for n in names[k : 2 * k]]
            for p in keys:
                add(p, rng.choice([0o644, 0o666, 0o640]))
            rules.append(
                (
                    "every .key file in deploy/secrets is readable by its owner only: mode 600",
                    dict.fromkeys(keys, 0o600),
                    "chmod 600 deploy/secrets/*.key",
                )
            )
        if difficulty >= 3:
            files.append(Spec(path="deploy/secrets", dir=True, mode=0o755))
            rules.append(
                (
                    "the deploy/secrets directory itself is private: mode 700",
                    {"deploy/secrets": 0o700},
                    "chmod 700 deploy/secrets",
                )
            )
            confs = [f"deploy/config/{n}.conf" for n in names[2 * k : 3 * k]]
            for p in confs:
                add(p, 0o666)
            rules.append(
                (
                    "config files in deploy/config have mode 644",
                    dict.fromkeys(confs, 0o644),
                    "chmod 644 deploy/config/*.conf",
                )
            )
        if difficulty >= 4:
            logs = [f"deploy/logs/{n}.log" for n in names[3 * k : 4 * k]]
            want = {}
            for p in logs:
                mode = rng.choice([0o666, 0o646, 0o662, 0o777])
                add(p, mode)
                want[p] = mode & ~0o002
            rules.append(
                (
                    "no file under deploy/logs is writable by others (remove only that bit)",
                    want,
                    "chmod o-w deploy/logs/*.log",
                )
            )
        if difficulty >= 5:
            data = [f"deploy/data/{n}.csv" for n in names[4 * k : 5 * k]]
            for p in data:
                add(p, rng.choice([0o644, 0o664, 0o755]))
            rules.append(
                (
                    "data files in deploy/data are read-only for everyone: mode 444",
                    dict.fromkeys(data, 0o444),
                    "chmod 444 deploy/data/*.csv",
                )
            )
        add(f"deploy/README-{names[-1]}.txt", 0o644)
        instruction = (
            "Fix the permissions of the deployment tree in /work/deploy: "
            + "; ".join(r[0] for r in rules)
            + ". Change nothing else."
        )
        tests = [
            CompletionTest(name=f"rule {i + 1}", kind="modes", args={"modes": modes})
            for i, (_, modes, _) in enumerate(rules)
        ]
        return Draft(
            instruction=instruction,
            files=files,
            gold=[run(r[2]) for r in rules],
            tests=tests,
            knobs={"rules": len(rules), "files": len(files)},
            goals=["permissions"],
        )
