"""A git repository written as plain files (loose objects, refs, index), reproducibly.

Terminal tasks describe their initial state as data; this builds a repository's ``.git``
without running git, with fixed authors and times so the same task has the same hashes.
"""

from __future__ import annotations

import hashlib
import struct
import zlib

from envfactory.terminal.fs import FileSpec, file

AUTHOR = "Dana Developer <dana@example.com>"
EPOCH = 1_700_000_000
CONFIG = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"


class Repo:
    """Commits over flat ``{path: text}`` snapshots; ``files()`` lays the repository out."""

    def __init__(self, root: str = "repo") -> None:
        self.root = root
        self.objects: dict[str, bytes] = {}  # uncompressed until laid out
        self.refs: dict[str, str] = {}
        self.trees: dict[str, dict[str, str]] = {}  # commit -> its files
        self.clock = EPOCH
        self._written: dict[frozenset[tuple[str, str]], str] = {}  # files -> their tree
        self._blobs: dict[str, str] = {}  # text -> its blob

    def _put(self, kind: str, body: bytes) -> str:
        raw = f"{kind} {len(body)}\0".encode() + body
        digest = hashlib.sha1(raw).hexdigest()
        self.objects[digest] = raw
        return digest

    def _blob(self, text: str) -> str:
        if text not in self._blobs:
            self._blobs[text] = self._put("blob", text.encode())
        return self._blobs[text]

    def _tree(self, files: dict[str, str]) -> str:
        """The tree of ``files``; a (sub)tree or blob already written is not hashed again."""
        key = frozenset(files.items())
        if key not in self._written:
            self._written[key] = self._write_tree(files)
        return self._written[key]

    def _write_tree(self, files: dict[str, str]) -> str:
        here: dict[str, str] = {}
        subdirs: dict[str, dict[str, str]] = {}
        for path, text in files.items():
            head, _, rest = path.partition("/")
            if rest:
                subdirs.setdefault(head, {})[rest] = text
            else:
                here[head] = self._blob(text)
        entries = [(n, "100644", d) for n, d in here.items()]
        entries += [(n, "40000", self._tree(sub)) for n, sub in subdirs.items()]
        entries.sort(key=lambda e: e[0] + ("/" if e[1] == "40000" else ""))
        body = b"".join(f"{m} {n}\0".encode() + bytes.fromhex(d) for n, m, d in entries)
        return self._put("tree", body)

    def commit(self, files: dict[str, str], message: str, parents: list[str]) -> str:
        self.clock += 3600
        stamp = f"{AUTHOR} {self.clock} +0000"
        body = f"tree {self._tree(files)}\n" + "".join(f"parent {p}\n" for p in parents)
        body += f"author {stamp}\ncommitter {stamp}\n\n{message}\n"
        digest = self._put("commit", body.encode())
        self.trees[digest] = dict(files)
        return digest

    def files(self, head: str, worktree: dict[str, str]) -> list[FileSpec]:
        """The repository with ``head`` checked out (index = that commit) and ``worktree``."""
        git = f"{self.root}/.git"
        out = [file(f"{git}/HEAD", f"ref: refs/heads/{head}\n"), file(f"{git}/config", CONFIG)]
        out += [file(f"{git}/refs/{name}", f"{sha}\n") for name, sha in sorted(self.refs.items())]
        out += [
            file(f"{git}/objects/{d[:2]}/{d[2:]}", zlib.compress(raw, 0), 0o444)
            for d, raw in sorted(self.objects.items())
        ]
        out.append(file(f"{git}/index", self._index(self.trees[self.refs[f"heads/{head}"]])))
        out += [file(f"{self.root}/{p}", t) for p, t in sorted(worktree.items())]
        return out

    def _index(self, files: dict[str, str]) -> bytes:
        body = bytearray(b"DIRC" + struct.pack(">II", 2, len(files)))
        for path in sorted(files, key=lambda p: p.encode()):
            data = files[path].encode()
            blob = hashlib.sha1(f"blob {len(data)}\0".encode() + data).digest()
            name = path.encode()
            entry = struct.pack(">10I", 0, 0, 0, 0, 0, 0, 0o100644, 0, 0, len(data))
            entry += blob + struct.pack(">H", min(len(name), 0xFFF)) + name
            entry += b"\0" * (8 - len(entry) % 8)
            body += entry
        return bytes(body) + hashlib.sha1(body).digest()
