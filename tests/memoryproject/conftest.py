"""The app served as `make run` serves it (uvicorn on memoryproject.asgi), on this test's
database and workspace, with settings of the test's choosing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.memory.mcp.conftest import ROOT, _free_port, env_for


@dataclass
class Served:
    url: str
    port: int
    pid: int
    tmp: Path  # the server's TMPDIR


@pytest.fixture
def serve(workspace, tmp_path):
    """`serve(MEMORY_MAX_BODY_BYTES="1000")`: uvicorn with those settings; stopped after."""
    procs = []

    def start(**settings: str) -> Served:
        port = _free_port()
        tmp = tmp_path / f"tmp-{port}"
        tmp.mkdir()
        log = (tmp_path / f"uvicorn-{port}.log").open("w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "memoryproject.asgi:application",
             "--port", str(port), "--lifespan", "on", "--no-proxy-headers"],
            cwd=ROOT, env={**env_for(workspace), "TMPDIR": str(tmp), **settings},
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        procs.append(proc)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{url}/healthz", timeout=1)
                return Served(url, port, proc.pid, tmp)
            except httpx.HTTPError:
                time.sleep(0.2)
        raise AssertionError((tmp_path / f"uvicorn-{port}.log").read_text())

    yield start
    for proc in procs:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
