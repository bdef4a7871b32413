"""An MCP server for the tests, driven by the SDK's own client: over stdio
(`manage.py mcp`) and over HTTP (uvicorn serving memoryproject.asgi, as `make run` does),
both on this test's database and workspace."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from memory.models import ApiToken
from tests.processes import test_database_url

ROOT = Path(__file__).resolve().parents[3]


def env_for(workspace) -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": test_database_url(), "MY_AGENT_HOME": str(workspace)}


def stdio_params(workspace, *args: str):
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp", *args],
        cwd=str(ROOT),
        env=env_for(workspace),
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def http_server(workspace, tmp_path):
    """uvicorn on memoryproject.asgi:application (Django + /mcp) on a free port."""
    port = _free_port()
    log = (tmp_path / "uvicorn.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "memoryproject.asgi:application", "--port", str(port),
         "--lifespan", "on"],
        cwd=ROOT, env=env_for(workspace), stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{url}/api/stats", timeout=1)
            break
        except httpx.HTTPError:
            time.sleep(0.2)
    else:
        raise AssertionError((tmp_path / "uvicorn.log").read_text())
    yield url
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    log.close()


def http_client(url: str, key: str | None, *, mode: str = "auto", **headers: str):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    return Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode)


def agent_key(agent, job: str = "") -> str:
    return ApiToken.issue(agent=agent, job=job)[1]
