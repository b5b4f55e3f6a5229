"""Archive handling: extract some or all of a tar or zip, or build an archive by rules."""

from __future__ import annotations

import gzip
import io
import random
import tarfile
import zipfile

from envfactory.terminal.checks import CompletionTest
from envfactory.terminal.family import WORDS, Draft, Family, python, q, run
from envfactory.terminal.fs import FileSpec, file, sha

EXTS = ("csv", "txt", "json", "log", "md")
ZIP_GOLD = """
import zipfile
with zipfile.ZipFile("release.zip", "w") as z:
    for path in open("manifest.txt").read().split():
        z.write(path)
"""


def tar_gz(members: dict[str, str]) -> bytes:
    """A reproducible .tar.gz of ``members`` (fixed times and owners)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as t:
        for name, text in sorted(members.items()):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 1_700_000_000, 0o644
            t.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


def zip_of(members: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in sorted(members.items()):
            z.writestr(zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0)), data)
    return raw.getvalue()


class ArchiveHandling(Family):
    id = "term-archive"
    name = "Archive handling"
    description = "Extract from tar.gz and zip archives (some nested) and build archives by rules."

    def generate(self, rng: random.Random, difficulty: int) -> Draft:
        n = 3 + 2 * difficulty
        names = rng.sample(WORDS, n)
        members = {}
        for w in names:
            folder = rng.choice(["data", "docs", "app"])
            members[f"{folder}/{w}.{rng.choice(EXTS)}"] = f"{w} {rng.random():.9f}\n"
        files: list[FileSpec]
        if difficulty in (1, 2):
            ext = rng.choice(sorted({p.rsplit(".", 1)[1] for p in members}))
            want = (
                members
                if difficulty == 1
                else {p: t for p, t in members.items() if p.endswith("." + ext)}
            )
            files = [file("backup.tar.gz", tar_gz(members))]
            what = "everything" if difficulty == 1 else f"only the .{ext} files"
            instruction = (
                f"Extract {what} from /work/backup.tar.gz into /work/restore/, keeping the paths "
                "they have in the archive."
            )
            pattern = "" if difficulty == 1 else f" --wildcards {q('*.' + ext)}"
            gold = [run(f"mkdir -p restore && tar -xzf backup.tar.gz -C restore{pattern}")]
            tests = [_dir("restore", want)]
        elif difficulty == 3:
            files = [file(f"app/{p}", t) for p, t in members.items()]
            files += [file(f"app/tmp/{w}.tmp", "scratch\n") for w in rng.sample(WORDS, 2)]
            files += [file(f"app/{rng.choice(WORDS)}.log", "noise\n")]
            want = {f"app/{p}": t for p, t in members.items() if not p.endswith(".log")}
            instruction = (
                "Create /work/release.tar.gz, a gzip-compressed tar of the /work/app folder "
                "(member paths start with app/) without any .log file and without app/tmp."
            )
            gold = [run("tar -czf release.tar.gz --exclude='*.log' --exclude=app/tmp app")]
            tests = [_archive("release.tar.gz", "tar", want)]
        elif difficulty == 4:
            target = rng.choice(sorted(members))
            inner = tar_gz(members)
            outer = {"inner/archive.tar.gz": inner, "NOTES.txt": b"the data is inside\n"}
            files = [file("bundle.zip", zip_of(outer))]
            instruction = (
                "/work/bundle.zip holds a tar.gz archive. Find the member "
                f"{target} inside it and extract just that file to /work/restore/{target}."
            )
            gold = [
                run(
                    "mkdir -p /tmp/x restore && python3 -m zipfile -e bundle.zip /tmp/x && "
                    f"tar -xzf /tmp/x/inner/archive.tar.gz -C restore {q(target)}"
                )
            ]
            tests = [_dir("restore", {target: members[target]})]
        else:
            files = [file(p, t) for p, t in members.items()]
            chosen = sorted(rng.sample(sorted(members), max(2, len(members) // 2)))
            files.append(file("manifest.txt", "\n".join(chosen) + "\n"))
            want = {p: members[p] for p in chosen}
            instruction = (
                "Create /work/release.zip holding exactly the files listed in /work/manifest.txt "
                "(one path per line), stored under those same paths."
            )
            gold = [python(ZIP_GOLD)]
            tests = [_archive("release.zip", "zip", want)]
        return Draft(
            instruction=instruction,
            files=files,
            gold=gold,
            tests=tests,
            knobs={"members": n},
            goals=["archive"],
        )


def _dir(path: str, want: dict[str, str]) -> CompletionTest:
    digests = {p: sha(t) for p, t in want.items()}
    return CompletionTest(
        name=f"{path}/ extracted", kind="dir_files", args={"dir": path, "files": digests}
    )


def _archive(path: str, fmt: str, want: dict[str, str]) -> CompletionTest:
    digests = {p: sha(t) for p, t in want.items()}
    return CompletionTest(
        name=f"{path} built", kind="archive", args={"path": path, "format": fmt, "files": digests}
    )
