"""Organise files by rules: sort an inbox into folders by kind, year and size."""

from __future__ import annotations

import random

from envfactory.terminal.checks import CompletionTest
from envfactory.terminal.family import WORDS, Draft, Family, q, read, run, write
from envfactory.terminal.fs import FileSpec, file, sha

KINDS = {
    "images": ("jpg", "png", "gif"),
    "documents": ("pdf", "txt", "md", "docx"),
    "audio": ("mp3", "wav", "flac"),
    "data": ("csv", "json", "xml"),
}
_EXT = {ext: kind for kind, exts in KINDS.items() for ext in exts}


class OrganizeFiles(Family):
    id = "term-organize-files"
    name = "Organise files by rules"
    description = "Sort a folder of mixed files into folders by kind, year and size."

    def generate(self, rng: random.Random, difficulty: int) -> Draft:
        n = rng.randint(*((3, 5), (5, 8), (7, 11), (9, 13), (11, 16))[difficulty - 1])
        src = rng.choice(["inbox", "downloads", "incoming", "desk", "dropbox", "scans"])
        dst = rng.choice(["sorted", "library", "filed", "archive", "organized"])
        by_year = difficulty >= 3
        nested = difficulty >= 4
        large = rng.randint(15, 40) * 100 if difficulty >= 5 else 0
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
            body = f"{name} {rng.random():.12f}\n" * rng.randint(1, 6)
            if large and rng.random() < 0.25:
                body *= 80
            path = f"{src}/{sub}{name}"
            if large and len(body) > large:
                dest = f"{dst}/large/{name}"
            else:
                dest = f"{dst}/{_EXT[ext]}/" + (f"{year or 'undated'}/" if by_year else "") + name
            files.append(file(path, body))
            moves.append((path, dest, body))
        keep = f"{src}/{rng.choice(WORDS)}.keep"
        stay = {keep: "stays here\n"}
        rules = [
            "images (.jpg .png .gif), documents (.pdf .txt .md .docx), audio (.mp3 .wav "
            f".flac) and data (.csv .json .xml) go to {dst}/<kind>/ (images, documents, audio "
            "or data); extensions count whatever their case"
        ]
        if by_year:
            rules.append(
                "inside each kind folder, files go to a folder named after the year in their "
                "name (YYYY-MM-DD), or to undated/ when the name has no date"
            )
        if nested:
            rules.append(f"files in subfolders of {src}/ are sorted too (by name, not by path)")
        policy = f"{src}/POLICY.txt"
        if large:
            stay[policy] = f"Files larger than {large} bytes go to {dst}/large/ instead.\n"
            rules.append(f"{policy} adds one more rule")
        files += [file(p, t) for p, t in stay.items()]
        instruction = (
            f"The folder /work/{src} is a mess. Move every file in it into /work/{dst} by these "
            "rules: "
            + "; ".join(rules)
            + f". Keep file names unchanged; leave {keep}"
            + (f" and {policy}" if large else "")
            + " where they are."
        )
        index = f"{dst}/INDEX.txt"
        if by_year:
            instruction += (
                f" Then write {index} listing the new paths relative to /work (like "
                f"{dst}/data/undated/x.csv), one per line, sorted."
            )
        groups: dict[str, dict[str, str]] = {}
        for _, dest, body in moves:
            top = "/".join(dest.split("/")[:2])
            groups.setdefault(top, {})[dest[len(top) + 1 :]] = sha(body)
        tests = [
            CompletionTest(name=f"{top} sorted", kind="dir_files", args={"dir": top, "files": want})
            for top, want in sorted(groups.items())
        ]
        left = {p.removeprefix(src + "/"): sha(t) for p, t in stay.items()}
        # Emptying the source counts only once its files arrived (deleting them is no move).
        tests.append(
            CompletionTest(
                name=f"{src} emptied",
                kind="dir_files",
                args={"dir": src, "files": left},
                requires=[t.name for t in tests],
            )
        )
        listing = "".join(f"{d}\n" for d in sorted(d for _, d, _ in moves))
        if by_year:
            tests.append(
                CompletionTest(name="index written", kind="files", args={"files": {index: listing}})
            )
        gold = [run(f"find {src} -type f | sort")]
        if large:
            gold.append(read("/work/" + policy))
        by_dest: dict[str, list[str]] = {}
        for path, dest, _ in moves:
            by_dest.setdefault(dest.rsplit("/", 1)[0], []).append(path)
        for folder, paths in sorted(by_dest.items()):
            gold.append(run(f"mkdir -p {q(folder)} && mv {' '.join(map(q, paths))} {q(folder)}/"))
        if nested:
            gold.append(run(f"find {src} -mindepth 1 -type d -empty -delete"))
        if by_year:
            gold.append(write(index, listing))
        return Draft(
            instruction=instruction,
            files=files,
            gold=gold,
            tests=tests,
            knobs={"files": n, "rules": len(rules)},
            goals=["organize"],
        )
