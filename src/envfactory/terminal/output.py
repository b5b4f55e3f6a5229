"""Command output: only the head and the tail are kept while reading (cut middle-out)."""

from __future__ import annotations


class Capture:
    """Collects a stream, holding its first and last ``limit // 2`` bytes."""

    def __init__(self, limit: int) -> None:
        self.half = max(limit // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.half:
                del self.tail[: len(self.tail) - self.half]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        head = bytes(self.head).decode("utf-8", "replace")
        tail = bytes(self.tail).decode("utf-8", "replace")
        if not self.truncated:
            return head + tail
        omitted = self.total - len(self.head) - len(self.tail)
        return f"{head}\n[... {omitted} bytes omitted ...]\n{tail}"
