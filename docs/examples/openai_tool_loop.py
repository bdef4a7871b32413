"""One turn of an agent on OpenAI's Chat Completions with this memory's tools."""

import os
import sys

import httpx
from openai import OpenAI

memory = httpx.Client(
    base_url=f"{os.environ.get('MEMORY_URL', 'http://127.0.0.1:8000')}/api/agents/master",
    headers={"Authorization": f"Bearer {os.environ['MEMORY_TOKEN']}"},  # an agent token
)
llm = OpenAI()  # OPENAI_API_KEY, OPENAI_BASE_URL (a llama.cpp or vLLM server works too)
tools = memory.get("/tools", params={"format": "openai"}).json()
conversation, turn, text = sys.argv[1], sys.argv[2], sys.argv[3]
context = memory.get("/memory/context", params={"conversation": conversation, "turn": turn})
messages = [
    {"role": "system", "content": "You are the owner's assistant.\n\n" + context.json()["system"]},
    # The notes block goes just before the turn's opening message, stored with it.
    {"role": "user", "content": f"{context.json()['pre_turn']}\n\n{text}".strip()},
]
first = os.environ.get("TOOL_CHOICE", "auto")  # a tool to call first (llama.cpp needs one)
for step in range(5):  # at most five calls, the last without tools: a turn always ends
    choice = "none" if step == 4 else first if step == 0 else "auto"
    if choice not in ("auto", "none", "required"):
        choice = {"type": "function", "function": {"name": choice}}
    reply = llm.chat.completions.create(
        model=os.environ.get("MODEL", "gpt-4o-mini"), messages=messages, tools=tools,
        tool_choice=choice, max_tokens=int(os.environ.get("MAX_TOKENS", 1024)))  # fmt: skip
    message = reply.choices[0].message
    messages.append({**message.model_dump(exclude_none=True), "content": message.content or ""})
    for call in message.tool_calls or []:
        answer = memory.post(f"/tools/{call.function.name}", content=call.function.arguments,
                             headers={"Content-Type": "application/json"})  # fmt: skip
        result = answer.json().get("result") or "Error: " + str(answer.json().get("detail"))
        messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    if not message.tool_calls:
        break
print(message.content)
