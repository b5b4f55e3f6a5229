"""Search and replace across a tree: rename identifiers in some files and not others."""

from __future__ import annotations

import random
import re

from envfactory.terminal.checks import CompletionTest
from envfactory.terminal.family import WORDS, Draft, Family, q, read, run, write
from envfactory.terminal.fs import FileSpec, file

TEMPLATES = (
    "def {x}(items):\n    return [i for i in items if i]\n",
    "from util import {x}\n\nvalue = {x}([1, 2, 3])\nprint(value)\n",
    "class Handler:\n    def run(self):\n        return {x}(self.items)  # uses {x}\n",
    "# {x} is called twice here\nresult = {x}({x}(data))\n",
    "CONFIG = {{'hook': '{x}'}}\n",
)
DOCS = "# Notes\n\nCall `{x}` to clean the items. See also {x}.\n"
DISTRACTOR = "def {x}_legacy(items):\n    return list(items)\n\nOLD = my_{x}\n"


EXTS = ("py", "js", "sh", "cfg")
COMMENT = {"py": "#", "js": "//", "sh": "#", "cfg": "#"}


class SearchReplace(Family):
    id = "term-search-replace"
    name = "Search and replace across a tree"
    description = "Rename identifiers across a source tree, respecting file types and exclusions."

    def generate(self, rng: random.Random, difficulty: int) -> Draft:
        a, b, c, d = rng.sample(WORDS, 4)
        pairs = [(f"{a}_{b}", f"{c}_{d}")]
        if difficulty >= 5:
            e, f = rng.sample([w for w in WORDS if w not in (a, b, c, d)], 2)
            pairs.append((f"fetch_{e}", f"load_{f}"))
        root = rng.choice(["project", "app", "service", "tool"]) + f"-{rng.choice(WORDS)}"
        n_src = rng.randint(*((1, 1), (2, 4), (3, 5), (4, 7), (5, 9))[difficulty - 1])
        whole_word = difficulty >= 3
        kinds = ["py"] if difficulty < 4 else rng.sample(EXTS, rng.randint(2, 3))
        skip = next(x for x in EXTS if x not in kinds) if difficulty >= 4 else None
        files: list[FileSpec] = []
        after: dict[str, str] = {}
        untouched: dict[str, str] = {}

        def sub(text: str) -> str:
            for old, new in pairs:
                text = re.sub(rf"\b{old}\b", new, text) if whole_word else text.replace(old, new)
            return text

        def source(ext: str, first: bool) -> str:
            parts = [rng.choice(TEMPLATES).format(x=rng.choice(pairs)[0]) for _ in range(2)]
            if whole_word and first:
                parts.append(DISTRACTOR.format(x=pairs[0][0]))
            text = "\n".join(parts)
            return text.replace("# ", COMMENT[ext] + " ") if ext != "py" else text

        for i in range(n_src):
            ext = rng.choice(kinds)
            path = f"{root}/src/{rng.choice(WORDS)}_{i}.{ext}"
            text = source(ext, i == 0)
            files.append(file(path, text))
            after[path] = sub(text)
        readme = f"{root}/README.md"
        files.append(file(readme, DOCS.format(x=pairs[0][0])))
        untouched[readme] = DOCS.format(x=pairs[0][0])
        if skip:
            other = f"{root}/src/{rng.choice(WORDS)}_x.{skip}"
            files.append(file(other, source(skip, False)))
            untouched[other] = files[-1].text or ""
        if difficulty >= 4:
            vendored = rng.choice(TEMPLATES).format(x=pairs[0][0])
            files.append(file(f"{root}/vendor/lib.py", vendored))
            untouched[f"{root}/vendor/lib.py"] = vendored
        types = " and ".join(f".{k}" for k in kinds)
        scope = f"in every {types} file under /work/{root}"
        if difficulty == 1:
            scope = f"in /work/{files[0].path}"
        rename = " and ".join(f"`{old}` to `{new}`" for old, new in pairs)
        instruction = f"Rename {rename} {scope}"
        instruction += " (whole identifiers only: names that merely contain it stay)" * whole_word
        instruction += f", except under {root}/vendor/" * (difficulty >= 4)
        instruction += ". Leave the README and every other file as it is."
        changelog = f"{root}/CHANGELOG.md"
        note = "".join(f"- Renamed {old} to {new}\n" for old, new in pairs)
        if difficulty >= 3:
            instruction += (
                f" Finally write {changelog} with one line per rename: `{note.splitlines()[0]}`."
            )
        sed = " ".join(
            f"-e 's/\\b{old}\\b/{new}/g'" if whole_word else f"-e 's/{old}/{new}/g'"
            for old, new in pairs
        )
        gold = [read(readme), run(f"grep -rn {pairs[0][0]} {root}")]
        gold += [run(f"sed -i {sed} {q(p)}") for p in after]
        tests = [
            CompletionTest(name="renamed in the sources", kind="files", args={"files": after}),
            CompletionTest(
                name="other files untouched", kind="files", args={"files": untouched}, gate=True
            ),
        ]
        if difficulty >= 3:
            gold.append(write(changelog, note))
            tests.append(
                CompletionTest(name="changelog", kind="files", args={"files": {changelog: note}})
            )
        return Draft(
            instruction=instruction,
            files=files,
            gold=gold,
            tests=tests,
            knobs={"files": n_src, "pairs": len(pairs), "whole_word": int(whole_word)},
            goals=["replace"],
        )
