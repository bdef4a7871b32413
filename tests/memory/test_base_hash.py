"""An editor passes the hash it read; a write over a change made meanwhile is 409, never
an erased line (an agent's memory_save between the owner's read and save)."""

from __future__ import annotations

from memory import clock, notes


def test_it_refuses_a_note_save_over_a_line_appended_since_it_was_read(owner_client, master):
    day = clock.today().isoformat()
    notes.memory_save(master, "first")
    read = owner_client.get(f"/api/agents/master/memory/notes/{day}").json()
    notes.memory_save(master, "appended by the agent meanwhile")

    response = owner_client.put(
        f"/api/agents/master/memory/notes/{day}",
        {"body": read["body"] + "- owner's edit\n", "base_hash": read["hash"]},
        format="json",
    )

    assert response.status_code == 409
    assert "appended by the agent meanwhile" in notes.read_note(master, day)
    assert "owner's edit" not in notes.read_note(master, day)


def test_it_saves_a_note_whose_base_is_current(owner_client, master, workspace):
    day = clock.today().isoformat()
    notes.memory_save(master, "first")
    read = owner_client.get(f"/api/agents/master/memory/notes/{day}").json()

    response = owner_client.put(
        f"/api/agents/master/memory/notes/{day}",
        {"body": "# edited\n", "base_hash": read["hash"]},
        format="json",
    )

    assert response.status_code == 200
    assert (workspace / "memory" / f"{day}.md").read_text() == "# edited\n"
    assert response.json()["hash"] != read["hash"]


def test_it_refuses_memory_md_and_user_md_saves_over_a_change(owner_client, master, workspace):
    memory = owner_client.get("/api/agents/master/memory").json()
    user = owner_client.get("/api/memory/user").json()
    (workspace / "MEMORY.md").write_text("- edited by hand\n")
    (workspace / "users/owner").mkdir(parents=True, exist_ok=True)
    (workspace / "users/owner/USER.md").write_text("Lan\n")

    stale_memory = owner_client.put(
        "/api/agents/master/memory", {"body": "x\n", "base_hash": memory["hash"]}, format="json"
    )
    stale_user = owner_client.put(
        "/api/memory/user", {"body": "y\n", "base_hash": user["hash"]}, format="json"
    )

    assert stale_memory.status_code == 409 and stale_user.status_code == 409
    assert (workspace / "MEMORY.md").read_text() == "- edited by hand\n"
    assert (workspace / "users/owner/USER.md").read_text() == "Lan\n"
    # Without a base_hash a PUT is a plain replace, as before.
    plain = owner_client.put("/api/agents/master/memory", {"body": "z\n"}, format="json")
    assert plain.status_code == 200 and (workspace / "MEMORY.md").read_text() == "z\n"
