"""Claude with Anthropic's client-side memory tool (memory_20250818), its /memories
directory being this agent's MEMORY.md and memory/ (POST …/memory-tool runs each command)."""

import os
import sys

import httpx
from anthropic import Anthropic

memory = httpx.Client(
    base_url=f"{os.environ.get('MEMORY_URL', 'http://127.0.0.1:8000')}/api/agents/master",
    headers={"Authorization": f"Bearer {os.environ['MEMORY_TOKEN']}"},  # an agent token
)
llm = Anthropic()  # ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
messages = [{"role": "user", "content": sys.argv[1]}]
while True:
    reply = llm.beta.messages.create(
        model=os.environ.get("MODEL", "claude-sonnet-4-5"),
        max_tokens=1024,
        messages=messages,
        tools=[{"type": "memory_20250818", "name": "memory"}],
        betas=["context-management-2025-06-27"],
    )
    messages.append({"role": "assistant", "content": reply.content})
    if reply.stop_reason != "tool_use":
        print("".join(block.text for block in reply.content if block.type == "text"))
        break
    results = []
    for block in (b for b in reply.content if b.type == "tool_use"):
        answer = memory.post("/memory-tool", json=block.input)  # 4xx: a refusal
        ok, body = answer.status_code < 300, answer.json()
        text = body["result"] if ok else body["detail"]
        results.append({"type": "tool_result", "tool_use_id": block.id, "content": text})
        results[-1]["is_error"] = not ok
    messages.append({"role": "user", "content": results})
