"""The files of a working directory as data, read and written without following links.

A :class:`Tree` maps relative paths to entries. Snapshots are taken with directory file
descriptors and ``O_NOFOLLOW``, so a link the agent planted never leads the host outside the
working directory, and a FIFO never blocks it. Paths from the agent are relative to the
sandbox's ``/work``; ``..`` and other absolute paths are refused.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict

from envfactory.contract.results import ToolFailure
from envfactory.terminal.sandbox import HOME

EntryKind = Literal["file", "dir", "link", "other"]
MAX_FILE = 1 << 20  # bytes of one file a snapshot keeps
MTIME = 1_700_000_000  # the modification time of every materialized path
VOLATILE = ".git/index"  # a cache of file stats (inode, ctime): not part of the state
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIR = os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class Entry:
    """One path: a file (its bytes, None past the size cap), a directory, a link or other."""

    kind: EntryKind
    mode: int = 0o644
    data: bytes | None = None
    target: str = ""
    size: int = 0


Tree = dict[str, Entry]


class FileSpec(BaseModel):
    """A path of a task's initial state: text or base64 bytes, a directory, or a link."""

    model_config = ConfigDict(frozen=True)

    path: str
    text: str | None = None
    b64: str | None = None
    mode: int = 0o644
    link: str | None = None
    dir: bool = False

    def entry(self) -> Entry:
        if self.dir:
            return Entry("dir", self.mode)
        if self.link is not None:
            return Entry("link", 0o777, target=self.link)
        data = base64.b64decode(self.b64) if self.b64 is not None else (self.text or "").encode()
        return Entry("file", self.mode, data, size=len(data))


def file(path: str, content: str | bytes, mode: int = 0o644) -> FileSpec:
    if isinstance(content, bytes):
        return FileSpec(path=path, b64=base64.b64encode(content).decode(), mode=mode)
    return FileSpec(path=path, text=content, mode=mode)


def tree_of(specs: list[FileSpec]) -> Tree:
    """The tree the specs describe, parent directories included."""
    tree: Tree = {}
    for spec in specs:
        parts = PurePosixPath(spec.path).parts
        for i in range(1, len(parts)):
            tree.setdefault("/".join(parts[:i]), Entry("dir", 0o755))
        tree[spec.path] = spec.entry()
    return tree


def tree_hash(tree: Tree) -> str:
    h = hashlib.blake2b(digest_size=16)
    for path in sorted(tree):
        e = tree[path]
        digest = hashlib.sha256(e.data).hexdigest() if e.data is not None else f"size:{e.size}"
        if path == VOLATILE or path.endswith("/" + VOLATILE):
            digest = "volatile"
        h.update(f"{path}\0{e.kind}\0{e.mode:o}\0{e.target}\0{digest}\n".encode())
    return h.hexdigest()


def sha(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


# -- snapshots ---------------------------------------------------------------------------------


def snapshot(root: Path, max_file: int = MAX_FILE) -> Tree:
    """Every path under ``root`` (links recorded, never followed)."""
    tree: Tree = {}
    for dirpath, dirnames, filenames, dirfd in os.fwalk(root, follow_symlinks=False):
        rel = os.path.relpath(dirpath, root)
        prefix = "" if rel == "." else rel + "/"
        for name in dirnames + filenames:
            try:
                st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
            except OSError:
                continue
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISDIR(st.st_mode):
                tree[prefix + name] = Entry("dir", mode)
            elif stat.S_ISLNK(st.st_mode):
                tree[prefix + name] = Entry("link", mode, target=os.readlink(name, dir_fd=dirfd))
            elif stat.S_ISREG(st.st_mode):
                data = _read_at(dirfd, name, max_file) if st.st_size <= max_file else None
                tree[prefix + name] = Entry("file", mode, data, size=st.st_size)
            else:
                tree[prefix + name] = Entry("other", mode)
    return tree


def _read_at(dirfd: int, name: str, limit: int) -> bytes | None:
    try:
        fd = os.open(name, _READ, dir_fd=dirfd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, left = [], limit + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 16))):
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return data if len(data) <= limit else None
    finally:
        os.close(fd)


def materialize(tree: Tree, root: Path, owner: tuple[int, int] | None = None) -> None:
    """Write ``tree`` under ``root`` (which exists); files belong to ``owner`` when given.

    Nothing is written through a link: entries below a path that is a link are skipped."""
    dirs = []
    links = {p for p, e in tree.items() if e.kind == "link"}
    for path in sorted(tree):
        e = tree[path]
        parts = path.split("/")
        if any("/".join(parts[:i]) in links for i in range(1, len(parts))):
            continue
        target = root / path
        if e.kind == "dir":
            target.mkdir(exist_ok=True)
            dirs.append((target, e.mode))
        elif e.kind == "link":
            os.symlink(e.target, target)
        elif e.kind == "file":
            target.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, e.data or b"")
                os.fchmod(fd, e.mode)
                if owner:
                    os.fchown(fd, *owner)
                os.utime(fd, (MTIME, MTIME))
            finally:
                os.close(fd)
            continue
        else:
            continue
        if owner:
            os.lchown(target, *owner)
    for target, mode in reversed(dirs):
        os.chmod(target, mode)
        os.utime(target, (MTIME, MTIME))


# -- the agent's file tools --------------------------------------------------------------------


def agent_path(raw: str) -> list[str]:
    """The components of a path the agent gave, relative to the working directory."""
    text = raw.strip()
    if text == HOME or text.startswith(HOME + "/"):
        text = text[len(HOME) :].lstrip("/")
    elif text.startswith("/"):
        raise ToolFailure("invalid_arguments", f"paths are relative to {HOME} or under it")
    parts = [p for p in PurePosixPath(text).parts if p != "."]
    if not parts:
        raise ToolFailure("invalid_arguments", "the path names no file")
    if ".." in parts:
        raise ToolFailure("invalid_arguments", "'..' is not allowed in paths")
    return parts


def _walk(root: Path, parts: list[str], create: bool, owner: tuple[int, int] | None) -> int:
    """A descriptor of the directory holding ``parts[-1]``, refusing links on the way."""
    fd = os.open(root, _DIR)
    try:
        for part in parts[:-1]:
            try:
                nxt = os.open(part, _DIR, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(part, 0o755, dir_fd=fd)
                if owner:
                    os.chown(part, *owner, dir_fd=fd, follow_symlinks=False)
                nxt = os.open(part, _DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def _failure(exc: OSError, shown: str) -> ToolFailure:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR) or isinstance(exc, NotADirectoryError):
        return ToolFailure(
            "invalid_arguments",
            f"{shown}: symbolic links are not followed by the file tools (use run_command)",
        )
    if isinstance(exc, FileNotFoundError):
        return ToolFailure("not_found", f"{shown}: no such file")
    if isinstance(exc, IsADirectoryError):
        return ToolFailure("invalid_arguments", f"{shown} is a directory")
    return ToolFailure("invalid_arguments", f"{shown}: {exc.strerror or 'cannot be used'}")


def read_file(root: Path, raw: str, limit: int) -> tuple[bytes, int]:
    """Up to ``limit`` bytes of a regular file, and its size."""
    parts = agent_path(raw)
    shown = "/".join(parts)
    try:
        dirfd = _walk(root, parts, False, None)
        try:
            fd = os.open(parts[-1], _READ, dir_fd=dirfd)
        finally:
            os.close(dirfd)
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, "is a directory")
            if not stat.S_ISREG(st.st_mode):
                raise ToolFailure("invalid_arguments", f"{shown} is not a regular file")
            return os.pread(fd, limit, 0), st.st_size
        finally:
            os.close(fd)
    except OSError as exc:
        raise _failure(exc, shown) from None


def write_file(root: Path, raw: str, data: bytes, owner: tuple[int, int] | None) -> str:
    """Create or replace a regular file (parents made); returns the path written."""
    parts = agent_path(raw)
    shown = "/".join(parts)
    try:
        dirfd = _walk(root, parts, True, owner)
        try:
            _unshare(dirfd, parts[-1])
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK
            fd = os.open(parts[-1], flags | os.O_CLOEXEC, 0o644, dir_fd=dirfd)
        finally:
            os.close(dirfd)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ToolFailure("invalid_arguments", f"{shown} is not a regular file")
            if owner:
                os.fchown(fd, *owner)
            os.write(fd, data)
        finally:
            os.close(fd)
    except OSError as exc:
        raise _failure(exc, shown) from None
    return shown


def _unshare(dirfd: int, name: str) -> None:
    """Unlink ``name`` when it is a hard link (a file shared with a pristine tree, as repository
    worlds lay them out), so that writing it never changes the other copies; its mode stays."""
    try:
        st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        os.unlink(name, dir_fd=dirfd)
        os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=dirfd))
        os.chmod(name, stat.S_IMODE(st.st_mode) | 0o200, dir_fd=dirfd)


def files_under(tree: Tree, prefix: str) -> Iterator[tuple[str, Entry]]:
    """Files below ``prefix`` (a directory path, "" for all), with paths relative to it."""
    base = prefix.rstrip("/") + "/" if prefix else ""
    for path, e in tree.items():
        if e.kind == "file" and path.startswith(base):
            yield path[len(base) :], e
