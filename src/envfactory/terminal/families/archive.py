"""Archive handling: extract some or all of a tar or zip, or build an archive by rules."""

from __future__ import annotations

import gzip
import io
import random
import tarfile
import zipfile
from collections.abc import Callable

from envfactory.terminal.checks import CompletionTest
from envfactory.terminal.family import WORDS, Draft, Family, q, read, run, write
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
        n = rng.randint(2 + difficulty, 4 + 2 * difficulty)
        members = {}
        for w in rng.sample(WORDS, n):
            folder = rng.choice(["data", "docs", "app", "conf"])
            members[f"{folder}/{w}.{rng.choice(EXTS)}"] = f"{w} {rng.random():.9f}\n"
        stamp = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        restore = rng.choice(["restore", "recovered", "unpacked", "extracted"])
        files: list[FileSpec] | Callable[[], list[FileSpec]]
        shape: list[str] = []
        if difficulty in (1, 2):
            name = f"{rng.choice(['backup', 'snapshot', 'export'])}-{stamp}.tar.gz"
            ext = rng.choice(sorted({p.rsplit(".", 1)[1] for p in members}))
            want = (
                members
                if difficulty == 1
                else {p: t for p, t in members.items() if p.endswith("." + ext)}
            )
            files = _packed(name, lambda: tar_gz(members))
            what = "everything" if difficulty == 1 else f"only the .{ext} files"
            instruction = (
                f"Extract {what} from /work/{name} into /work/{restore}/, keeping the paths "
                "they have in the archive."
            )
            pattern = "" if difficulty == 1 else f" --wildcards {q('*.' + ext)}"
            gold = [
                run(f"tar -tzf {name}"),
                run(f"mkdir -p {restore} && tar -xzf {name} -C {restore}{pattern}"),
            ]
            gold += [run(f"find {restore} -type f")] * (difficulty == 2)
            tests = [_dir(restore, want)]
        elif difficulty == 3:
            app = rng.choice(["app", "site", "service"])
            files = [file(f"{app}/{p}", t) for p, t in members.items()]
            files += [file(f"{app}/tmp/{w}.tmp", "scratch\n") for w in rng.sample(WORDS, 2)]
            files += [file(f"{app}/{rng.choice(WORDS)}.log", "noise\n")]
            want = {f"{app}/{p}": t for p, t in members.items() if not p.endswith(".log")}
            out = f"{app}-{stamp}.tar.gz"
            instruction = (
                f"Create /work/{out}, a gzip-compressed tar of the /work/{app} folder (member "
                f"paths start with {app}/) without any .log file and without {app}/tmp."
            )
            gold = [
                run(f"find {app} -type f"),
                run(f"tar -czf {out} --exclude='*.log' --exclude={app}/tmp {app}"),
                run(f"tar -tzf {out}"),
            ]
            tests = [_archive(out, "tar", want)]
        elif difficulty == 4:
            target = rng.choice(sorted(members))
            bundle = f"bundle-{stamp}.zip"
            notes = b"the data is inside\n"
            files = _packed(
                bundle,
                lambda: zip_of({"inner/archive.tar.gz": tar_gz(members), "NOTES.txt": notes}),
            )
            instruction = (
                f"/work/{bundle} holds a tar.gz archive. Find the member {target} inside it "
                f"and extract just that file to /work/{restore}/{target}."
            )
            gold = [
                run(f"python3 -m zipfile -l {bundle}"),
                run(f"python3 -m zipfile -e {bundle} bundle"),
                run("tar -tzf bundle/inner/archive.tar.gz"),
                run(
                    f"mkdir -p {restore} && tar -xzf bundle/inner/archive.tar.gz -C {restore} "
                    f"{q(target)}"
                ),
            ]
            tests = [_dir(restore, {target: members[target]})]
        else:
            files = [file(p, t) for p, t in members.items()]
            chosen = rng.sample(sorted(members), rng.randint(2, max(2, len(members) - 2)))
            manifest = f"{rng.choice(['manifest', 'release', 'include'])}.txt"
            files.append(file(manifest, "\n".join(chosen) + "\n"))
            out = f"release-{stamp}.zip"
            want = {p: members[p] for p in chosen}
            instruction = (
                f"Create /work/{out} holding exactly the files listed in /work/{manifest} (one "
                "path per line), stored under those same paths."
            )
            script = ZIP_GOLD.replace("release.zip", out).replace("manifest.txt", manifest)
            gold = [
                read(manifest),
                write("make_zip.py", script),
                run("python3 make_zip.py"),
                run(f"python3 -m zipfile -l {out}"),
            ]
            tests = [_archive(out, "zip", want)]
            shape = [p.rsplit(".", 1)[1] for p in chosen]
        return Draft(
            instruction=instruction,
            files=files,
            gold=gold,
            tests=tests,
            knobs={"members": n},
            goals=["archive"],
            shape=shape,
        )


def _packed(path: str, pack: Callable[[], bytes]) -> Callable[[], list[FileSpec]]:
    """A task's one archive, packed when the files are laid out."""
    return lambda: [file(path, pack())]


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
