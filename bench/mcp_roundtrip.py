"""MCP round trip: median of 100 memory_search calls over stdio and over Streamable HTTP
(the SDK's own client, against uvicorn serving memoryproject.asgi), next to the same
search over REST (POST …/tools/memory_search), in one run on a throwaway workspace and
database. Prints milliseconds and the ratios to REST."""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ holds http.py: its folder goes last on the path, so the standard library's http
# package (which Django and httpx import) is never that benchmark.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.append(sys.path.pop(0))

import asyncio
import os
import signal
import socket
import statistics
import subprocess
import tempfile
import time

ROOT = Path(__file__).resolve().parent.parent
CALLS = 100


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    env = {**os.environ, "MY_AGENT_HOME": str(tmp / "home"),
           "DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}"}  # fmt: skip
    os.environ.update(env)
    (tmp / "home" / "memory").mkdir(parents=True)
    for day in range(1, 29):
        (tmp / "home" / "memory" / f"2026-02-{day:02d}.md").write_text(
            f"# 2026-02-{day:02d}\n" + "".join(f"- 09:{n:02d} ran {n} km, tea\n" for n in range(30))
        )
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    key = subprocess.run([*manage, "memory_token", "agent", "master"], cwd=ROOT, env=env,
                         check=True, capture_output=True, text=True).stdout.strip()  # fmt: skip
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "memoryproject.asgi:application", "--port", str(port),
         "--lifespan", "on", "--log-level", "warning"],
        cwd=ROOT, env=env, start_new_session=True,
    )  # fmt: skip
    try:
        import httpx

        url = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                httpx.get(f"{url}/api/stats", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        figures = {
            "REST POST /tools/memory_search": rest(url, key),
            "MCP Streamable HTTP (2026-07-28)": asyncio.run(mcp_http(url, key)),
            "MCP stdio (2026-07-28)": asyncio.run(mcp_stdio(env)),
        }
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=20)
    base = figures["REST POST /tools/memory_search"]
    from importlib.metadata import version

    print(f"mcp SDK {version('mcp')}; median of {CALLS} memory_search calls (warm)")
    for name, median in figures.items():
        print(f"  {name:36} {median * 1000:7.2f} ms  ({median / base:.2f}x REST)")


def _median(samples: list[float]) -> float:
    return statistics.median(samples)


def rest(url: str, key: str) -> float:
    import httpx

    samples = []
    with httpx.Client(headers={"Authorization": f"Bearer {key}"}) as client:
        for index in range(CALLS + 5):
            start = time.perf_counter()
            client.post(f"{url}/api/agents/master/tools/memory_search", json={"query": "ran tea"})
            if index >= 5:
                samples.append(time.perf_counter() - start)
    return _median(samples)


async def _calls(client) -> float:
    samples = []
    for index in range(CALLS + 5):
        start = time.perf_counter()
        result = await client.call_tool("memory_search", {"query": "ran tea"})
        assert not result.is_error
        if index >= 5:
            samples.append(time.perf_counter() - start)
    return _median(samples)


async def mcp_http(url: str, key: str) -> float:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http:
        async with Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
            return await _calls(client)


async def mcp_stdio(env: dict) -> float:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["manage.py", "mcp", "--agent",
                                   "master"], cwd=str(ROOT), env=env)  # fmt: skip
    async with Client(params) as client:
        return await _calls(client)


if __name__ == "__main__":
    main()
