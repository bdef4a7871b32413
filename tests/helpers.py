"""What many tests need: a file written by hand (the "person edits the disk" path, on
purpose not through memory.workspace), a tool call over REST, and a burst of requests
that start at the same moment."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx


def write_by_hand(path: Path, text: str, *, mtime: float | None = None) -> Path:
    """Write `text` to `path` as a person editing the workspace would (parents created);
    with `mtime`, set its modification time too."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def call_tool(client, tool: str, *, agent: str = "master", **arguments: Any):
    """POST /api/agents/{agent}/tools/{tool} with the arguments as the JSON body."""
    return client.post(f"/api/agents/{agent}/tools/{tool}", data=arguments, format="json")


def tool_text(client, tool: str, *, agent: str = "master", **arguments: Any) -> str:
    """The text the model reads from a tool call that must succeed."""
    response = call_tool(client, tool, agent=agent, **arguments)
    assert response.status_code == 200, response.content
    return response.json()["result"]


def all_at_once(calls: Sequence[Callable[[httpx.Client], Any]]) -> list[Any]:
    """Run each call in a thread of its own with its own HTTP client, all released at
    once by a barrier; their results in order. An exception in any call is raised after
    all have finished."""
    barrier = threading.Barrier(len(calls))
    out: list[Any] = [None] * len(calls)

    def run(index: int) -> None:
        with httpx.Client(timeout=60) as client:
            barrier.wait()
            try:
                out[index] = calls[index](client)
            except BaseException as exc:  # surfaced below
                out[index] = exc

    threads = [threading.Thread(target=run, args=(index,)) for index in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for result in out:
        if isinstance(result, BaseException):
            raise result
    return out
