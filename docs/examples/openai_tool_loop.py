"""One turn of an agent on OpenAI's Chat Completions with this memory's tools."""

import os
import sys

import httpx
from openai import OpenAI

memory = httpx.Client(
    base_url=f"{os.environ.get('MEMORY_URL', 'http://127.0.0.1:8000')}/api/agents/master",
    headers={"Authorization": f"Bearer {os.environ['MEMORY_TOKEN']}"},  # an agent token
)
llm = OpenAI()  # OPENAI_API_KEY, OPENAI_BASE_URL
tools = memory.get("/tools", params={"format": "openai"}).json()
conversation, turn, text = sys.argv[1], sys.argv[2], sys.argv[3]
context = memory.get("/memory/context", params={"conversation": conversation, "turn": turn})
messages = [
    {"role": "system", "content": "You are the owner's assistant.\n\n" + context.json()["system"]},
    # The notes block goes just before the turn's opening message, stored with it.
    {"role": "user", "content": f"{context.json()['pre_turn']}\n\n{text}".strip()},
]
while True:
    reply = llm.chat.completions.create(
        model=os.environ.get("MODEL", "gpt-4o-mini"), messages=messages, tools=tools
    )
    message = reply.choices[0].message
    messages.append(message.model_dump(exclude_none=True))
    if not message.tool_calls:
        print(message.content)
        break
    for call in message.tool_calls:
        answer = memory.post(
            f"/tools/{call.function.name}",
            content=call.function.arguments,
            headers={"Content-Type": "application/json"},
        )
        result = answer.json().get("result") or "Error: " + answer.json()["detail"]
        messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
