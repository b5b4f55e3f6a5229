"""Organise files by rules: sort an inbox into folders by kind, year and size."""

from __future__ import annotations

import random

from envfactory.terminal.checks import CompletionTest
from envfactory.terminal.family import WORDS, Draft, Family, q, run
from envfactory.terminal.fs import FileSpec, file, sha

KINDS = {
    "images": ("jpg", "png", "gif"),
    "documents": ("pdf", "txt", "md", "docx"),
    "audio": ("mp3", "wav", "flac"),
    "data": ("csv", "json", "xml"),
}
_EXT = {ext: kind for kind, exts in KINDS.items() for ext in exts}
LARGE = 2048


class OrganizeFiles(Family):
    id = "term-organize-files"
    name = "Organise files by rules"
    description = "Sort a folder of mixed files into folders by kind, year and size."

    def generate(self, rng: random.Random, difficulty: int) -> Draft:
        n = (4, 7, 10, 13, 16)[difficulty - 1]
        by_year = difficulty >= 3
        nested = difficulty >= 4
        large_rule = difficulty >= 5
        names: set[str] = set()
        files: list[FileSpec] = []
        moves: list[tuple[str, str, str]] = []
        while len(files) < n:
            ext = rng.choice(sorted(_EXT))
            stem = f"{rng.choice(WORDS)}_{rng.randint(1, 999)}"
            year = rng.choice([None, 2021, 2022, 2023, 2024]) if by_year else None
            if year is not None:
                stem += f"_{year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
            shown_ext = ext.upper() if difficulty >= 2 and rng.random() < 0.3 else ext
            name = f"{stem}.{shown_ext}"
            if name.lower() in names:
                continue
            names.add(name.lower())
            sub = rng.choice(["", "", "old/", "misc/deep/"]) if nested else ""
            big = large_rule and rng.random() < 0.25
            body = f"{name} {rng.random():.12f}\n" * (rng.randint(1, 6) if not big else 120)
            src = f"inbox/{sub}{name}"
            if large_rule and len(body) > LARGE:
                dest = f"sorted/large/{name}"
            else:
                dest = f"sorted/{_EXT[ext]}/"
                if by_year:
                    dest += f"{year}/" if year else "undated/"
                dest += name
            files.append(file(src, body))
            moves.append((src, dest, body))
        if not any(d.startswith("sorted/") for _, d, _ in moves):
            moves = moves[:1]
        keep = f"inbox/{rng.choice(WORDS)}.keep"
        files.append(file(keep, "stays here\n"))
        rules = [
            "images (.jpg .png .gif), documents (.pdf .txt .md .docx), audio (.mp3 .wav "
            ".flac) and data (.csv .json .xml) go to sorted/<kind>/ (images, documents, audio "
            "or data); extensions count whatever their case"
        ]
        if by_year:
            rules.append(
                "inside each kind folder, files go to a folder named after the year in their "
                "name (YYYY-MM-DD), or to undated/ when the name has no date"
            )
        if nested:
            rules.append("files in subfolders of inbox/ are sorted too (by name, not by path)")
        if large_rule:
            rules.append(f"files larger than {LARGE} bytes go to sorted/large/ instead")
        instruction = (
            "The folder /work/inbox is a mess. Move every file in it into /work/sorted by these "
            "rules: " + "; ".join(rules) + f". Keep file names unchanged; leave {keep} where it "
            "is."
        )
        tests = []
        groups: dict[str, dict[str, str]] = {}
        for _, dest, body in moves:
            top = "/".join(dest.split("/")[:2])
            groups.setdefault(top, {})[dest[len(top) + 1 :]] = sha(body)
        for top, want in sorted(groups.items()):
            tests.append(
                CompletionTest(
                    name=f"{top} sorted", kind="dir_files", args={"dir": top, "files": want}
                )
            )
        tests.append(
            CompletionTest(
                name="inbox emptied",
                kind="dir_files",
                args={"dir": "inbox", "files": {keep.removeprefix("inbox/"): sha("stays here\n")}},
            )
        )
        script = ["set -e"]
        for src, dest, _ in moves:
            script.append(f"mkdir -p {q(dest.rsplit('/', 1)[0])} && mv {q(src)} {q(dest)}")
        if nested:
            script.append("find inbox -mindepth 1 -type d -empty -delete")
        return Draft(
            instruction=instruction,
            files=files,
            gold=[run("\n".join(script))],
            tests=tests,
            knobs={"files": n, "rules": len(rules)},
            goals=["organize"],
        )
