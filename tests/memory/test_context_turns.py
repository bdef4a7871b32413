"""A retry never loses the notes block (SPEC §4.2): `turn` makes the context request
retry-safe — the same turn answers the same block, only a new turn advances."""

from __future__ import annotations

import threading

import pytest

from memory import clock, notes
from memory.models import NoteCursor

URL = "/api/agents/master/memory/context"


def today_note(workspace):
    (workspace / "memory").mkdir(exist_ok=True)
    return workspace / "memory" / f"{clock.today().isoformat()}.md"


def context(client, **params):
    response = client.get(URL, params)
    assert response.status_code == 200, response.content
    return response.json()["pre_turn"]


def test_the_same_turn_gets_the_same_block_and_a_new_turn_only_whats_new(master_client, workspace):
    today_note(workspace).write_text("# day\n- 09:00 ran 5 km\n")
    first = context(master_client, conversation="c1", turn="t1")
    assert "ran 5 km" in first
    notes.memory_save(notes_agent(), "drank water")  # this turn's own write
    assert context(master_client, conversation="c1", turn="t1") == first  # the retry
    assert context(master_client, conversation="c1", turn="t1") == first
    second = context(master_client, conversation="c1", turn="t2")
    assert "(new since last shown)" in second and "drank water" in second
    assert "ran 5 km" not in second
    assert context(master_client, conversation="c1", turn="t3") == ""


def test_without_a_turn_every_call_advances_as_before(master_client, workspace):
    today_note(workspace).write_text("# day\n- 09:00 ran\n")
    assert "ran" in context(master_client, conversation="c2")
    assert context(master_client, conversation="c2") == ""


def test_a_turn_without_a_conversation_is_422(master_client):
    assert master_client.get(URL, {"turn": "t1"}).status_code == 422


@pytest.mark.django_db(transaction=True)
def test_a_retry_racing_the_original_gets_the_same_block(master_client, workspace):
    today_note(workspace).write_text("# day\n- 09:00 ran\n")
    answers: list[str] = []
    barrier = threading.Barrier(6)

    def ask():
        from django.db import connection

        barrier.wait()
        try:
            answers.append(context(master_client, conversation="race", turn="t1"))
        finally:
            connection.close()

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(answers) == 6 and len(set(answers)) == 1 and "ran" in answers[0]
    assert NoteCursor.objects.filter(conversation="race").count() == 1


def notes_agent():
    from memory.agents import default_agent

    return default_agent()
