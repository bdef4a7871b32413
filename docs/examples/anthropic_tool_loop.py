"""One turn of an agent on Anthropic's Messages API with this memory's tools."""

import os
import sys

import httpx
from anthropic import Anthropic

memory = httpx.Client(
    base_url=f"{os.environ.get('MEMORY_URL', 'http://127.0.0.1:8000')}/api/agents/master",
    headers={"Authorization": f"Bearer {os.environ['MEMORY_TOKEN']}"},  # an agent token
)
llm = Anthropic()  # ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
tools = memory.get("/tools", params={"format": "anthropic"}).json()
conversation, turn, text = sys.argv[1], sys.argv[2], sys.argv[3]
context = memory.get("/memory/context", params={"conversation": conversation, "turn": turn})
system = "You are the owner's assistant.\n\n" + context.json()["system"]
# The notes block goes just before the turn's opening message, stored with it.
messages = [{"role": "user", "content": f"{context.json()['pre_turn']}\n\n{text}".strip()}]
for step in range(5):  # at most five calls, the last without tools: a turn always ends
    model = os.environ.get("MODEL", "claude-sonnet-4-5")
    choice = {"type": "none" if step == 4 else "auto"}
    kwargs = {"system": system, "tools": tools, "messages": messages, "tool_choice": choice}
    reply = llm.messages.create(model=model, max_tokens=1024, **kwargs)
    messages.append({"role": "assistant", "content": reply.content})
    if reply.stop_reason != "tool_use":
        print("".join(block.text for block in reply.content if block.type == "text"))
        break
    results = []
    for block in (b for b in reply.content if b.type == "tool_use"):
        answer = memory.post(f"/tools/{block.name}", json=block.input)  # 4xx: a refusal
        ok, body = answer.status_code < 300, answer.json()
        text = body["result"] if ok else body["detail"]
        results.append({"type": "tool_result", "tool_use_id": block.id, "content": text})
        results[-1]["is_error"] = not ok
    messages.append({"role": "user", "content": results})
