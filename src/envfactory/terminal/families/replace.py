"""Search and replace across a tree: rename identifiers in some files and not others."""

from __future__ import annotations

import random
import re

from envfactory.terminal.checks import CompletionTest
from envfactory.terminal.family import WORDS, Draft, Family, run
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
        n_src = (1, 3, 4, 5, 6)[difficulty - 1]
        whole_word = difficulty >= 3
        files: list[FileSpec] = []
        after: dict[str, str] = {}
        untouched: dict[str, str] = {}

        def sub(text: str) -> str:
            for old, new in pairs:
                text = re.sub(rf"\b{old}\b", new, text) if whole_word else text.replace(old, new)
            return text

        for i in range(n_src):
            parts = [rng.choice(TEMPLATES).format(x=rng.choice(pairs)[0]) for _ in range(2)]
            if whole_word and i == 0:
                parts.append(DISTRACTOR.format(x=pairs[0][0]))
            text = "\n".join(parts)
            path = f"project/src/{rng.choice(WORDS)}_{i}.py"
            files.append(file(path, text))
            after[path] = sub(text)
        files.append(file("project/README.md", DOCS.format(x=pairs[0][0])))
        untouched["project/README.md"] = DOCS.format(x=pairs[0][0])
        if difficulty >= 4:
            vendored = rng.choice(TEMPLATES).format(x=pairs[0][0])
            files.append(file("project/vendor/lib.py", vendored))
            untouched["project/vendor/lib.py"] = vendored
        scope = "in every .py file under /work/project" if difficulty >= 2 else "in /work/project"
        if difficulty == 1:
            scope = f"in {files[0].path.replace('project/', '/work/project/')}"
        rename = " and ".join(f"`{old}` to `{new}`" for old, new in pairs)
        instruction = f"Rename {rename} {scope}"
        instruction += " (whole identifiers only: names that merely contain it stay)" * whole_word
        instruction += ", except under project/vendor/" * (difficulty >= 4)
        instruction += ". Leave the README and every other file as it is."
        find = "find project -name '*.py'" + (" -not -path 'project/vendor/*'" * (difficulty >= 4))
        if difficulty == 1:
            find = f"echo {files[0].path}"
        sed = " ".join(
            f"-e 's/\\b{old}\\b/{new}/g'" if whole_word else f"-e 's/{old}/{new}/g'"
            for old, new in pairs
        )
        tests = [
            CompletionTest(name="renamed in the sources", kind="files", args={"files": after}),
            CompletionTest(
                name="other files untouched", kind="files", args={"files": untouched}, gate=True
            ),
        ]
        return Draft(
            instruction=instruction,
            files=files,
            gold=[run(f"{find} | xargs sed -i {sed}")],
            tests=tests,
            knobs={"files": n_src, "pairs": len(pairs), "whole_word": int(whole_word)},
            goals=["replace"],
        )
