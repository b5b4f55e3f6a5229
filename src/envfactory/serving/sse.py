"""Server-sent events as the Open Reward Standard frames them: ``task_id``, then ``chunk``s
(each at most 4096 characters) and a closing ``end`` that together carry one JSON document."""

from __future__ import annotations

from fastapi.responses import Response

CHUNK = 4096
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
SSE = "text/event-stream"


def frame(event: str, data: str) -> str:
    lines = data.split("\n") if data else [""]
    return f"event: {event}\r\n" + "".join(f"data: {line}\r\n" for line in lines) + "\r\n"


def split_payload(payload: str, size: int = CHUNK) -> list[str]:
    """Pieces of at most ``size`` characters, none starting with blank space (some SSE readers
    strip all leading blanks of a data line, not just the one the format allows)."""
    pieces, start, n = [], 0, len(payload)
    while start < n:
        end = min(start + size, n)
        while end < n and payload[end] in " \t" and end > start + 1:
            end -= 1
        pieces.append(payload[start:end])
        start = end
    return pieces or [""]


def result_stream(task_id: str, payload: str) -> Response:
    """The whole stream of a call whose result is ready: task_id, chunks, end."""
    parts = [frame("task_id", task_id)]
    pieces = split_payload(payload)
    for i, piece in enumerate(pieces):
        parts.append(frame("end" if i == len(pieces) - 1 else "chunk", piece))
    return Response("".join(parts), media_type=SSE, headers=HEADERS)


def sse_content(description: str) -> dict[int | str, dict[str, object]]:
    """OpenAPI ``responses`` entry for a route that answers with an event stream."""
    return {200: {"description": description, "content": {SSE: {"schema": {"type": "string"}}}}}
