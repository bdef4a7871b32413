"""Every version of every memory file (SPEC §7): what the app writes, what a
person changed outside it, restore as a forward change exactly once, blame, retention."""

from __future__ import annotations

import datetime as dt
import threading

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from memory import history, notes, textdiff, workspace
from memory.attribution import attributed
from memory.errors import Conflict, InvalidInput
from memory.models import ApiToken, FileVersion
from memory.writes import add_memory_lines_or_propose
from proposals import actions

AT = dt.datetime(2026, 11, 30, 9, 15, tzinfo=dt.UTC)


def _texts(path: str) -> list[bytes | None]:
    return [history.content(v) for v in FileVersion.objects.filter(path=path).order_by("seq")]


def test_it_records_each_write_with_who_and_the_text(master, workspace):
    with workspace_attributed(actor="alice", source="web", via="pages"):
        notes.write_memory(master, "- one\n")
        notes.write_memory(master, "- one\n- two\n")

    rows = list(FileVersion.objects.filter(path="MEMORY.md").order_by("seq"))
    assert [r.op for r in rows] == ["write", "write"]
    assert [history.content(r) for r in rows] == [b"- one\n", b"- one\n- two\n"]
    assert (rows[-1].actor, rows[-1].source, rows[-1].via) == ("alice", "web", "pages")
    assert (rows[-1].lines_removed, rows[-1].lines_added) == (0, 1)
    assert history.replaced(rows[-1]) == b"- one\n"


def workspace_attributed(**fields):
    return attributed(**fields)


def test_an_edit_made_outside_the_app_is_recorded_first(master, workspace):
    notes.memory_save(master, "first", now=AT)
    note = workspace / "memory/2026-11-30.md"
    note.write_text("# 2026-11-30\n\nwritten by hand in vim\n")
    notes.memory_save(master, "second", now=AT)

    rows = list(FileVersion.objects.filter(path="memory/2026-11-30.md").order_by("seq"))
    assert [r.op for r in rows] == ["write", "outside", "append"]
    assert rows[1].note == history.OUTSIDE_NOTE
    assert history.content(rows[1]) == b"# 2026-11-30\n\nwritten by hand in vim\n"
    assert history.content(rows[2]) == note.read_bytes()


def test_a_file_that_existed_before_history_is_kept_as_found(master, workspace):
    (workspace / "memory").mkdir()
    (workspace / "memory/old.md").write_text("kept by hand\n")
    notes.write_memory_file(master, "memory/old.md", "replaced\n")

    rows = list(FileVersion.objects.filter(path="memory/old.md").order_by("seq"))
    assert [(r.op, r.note) for r in rows] == [
        ("outside", history.FIRST_SEEN_NOTE),
        ("write", ""),
    ]
    assert history.content(rows[0]) == b"kept by hand\n"


def test_deltas_and_snapshots_read_back_every_version(master, workspace):
    texts = []
    for n in range(80):
        text = "".join(f"- line {i}{' changed' if i == n % 30 else ''}\n" for i in range(30))
        text += f"- last {n}\n"
        notes.write_memory(master, text)
        texts.append(text.encode())
    rows = list(FileVersion.objects.filter(path="MEMORY.md").order_by("seq"))
    assert [history.content(r) for r in rows] == texts
    storages = {r.storage for r in rows}
    assert storages == {"full", "delta"}
    assert all(r.seq - r.base_seq < history.SNAPSHOT_EVERY for r in rows)


def test_appends_store_only_what_was_appended(master, workspace):
    for n in range(40):
        notes.memory_save(master, f"entry {n}", now=AT)
    rows = list(FileVersion.objects.filter(path="memory/2026-11-30.md").order_by("seq"))
    assert rows[0].op == "write" and {r.op for r in rows[1:]} == {"append"}
    assert history.content(rows[-1]) == (workspace / "memory/2026-11-30.md").read_bytes()
    assert history.content(rows[10]).decode().count("- 09:15 entry") == 11


def test_a_delete_is_a_version_and_the_deleted_text_stays(db, workspace):
    from memory import facts

    facts.save_fact(
        "tea", description="d", type="preference", body="b", written_by="owner", source="web"
    )
    facts.forget_fact("tea")
    rows = list(FileVersion.objects.filter(path="users/owner/facts/tea.md").order_by("seq"))
    assert [r.op for r in rows] == ["write", "delete"]
    assert rows[1].exists is False
    assert b"description: d" in history.replaced(rows[1])


def test_restore_is_a_new_version_checked_against_the_base(master, workspace):
    notes.write_memory(master, "- version one\n")
    notes.write_memory(master, "- version two\n")
    one = FileVersion.objects.get(path="MEMORY.md", seq=1)

    with pytest.raises(Conflict):
        history.restore(one, base_hash="stale", by="alice")
    with pytest.raises(InvalidInput):
        history.restore(one, base_hash="", by="alice")

    made = history.restore(one, base_hash=workspace_hash("MEMORY.md"), by="alice")
    assert (workspace / "MEMORY.md").read_text() == "- version one\n"
    assert (made.op, made.restored_from_id, made.note) == (
        "restore",
        one.pk,
        "restore of version 1",
    )
    # The versions in between are still there.
    assert _texts("MEMORY.md")[-3:] == [b"- version one\n", b"- version two\n", b"- version one\n"]
    with pytest.raises(Conflict):  # already holds that text
        history.restore(one, base_hash=workspace_hash("MEMORY.md"), by="alice")


def workspace_hash(path: str) -> str:
    return workspace.bytes_hash(path)


def test_restoring_a_fact_regenerates_the_index(db, workspace):
    from memory import facts

    facts.save_fact(
        "tea", description="old", type="preference", body="b", written_by="owner", source="web"
    )
    facts.save_fact(
        "tea", description="new", type="preference", body="b", written_by="owner", source="web"
    )
    first = FileVersion.objects.filter(path="users/owner/facts/tea.md").order_by("seq").first()
    history.restore(first, base_hash=workspace_hash("users/owner/facts/tea.md"), by="alice")
    assert "— old" in (workspace / "users/owner/facts/INDEX.md").read_text()


def test_an_approval_and_its_undo_name_the_proposal(helper_agent, workspace):
    _, proposal = add_memory_lines_or_propose(helper_agent, ["from the job"], source="job:brief")
    actions.approve(proposal, by="alice")
    actions.undo(proposal, by="alice")
    rows = list(FileVersion.objects.filter(path="agents/helper/MEMORY.md").order_by("seq"))
    assert [(r.actor, r.source, r.proposal_id, r.note) for r in rows[-2:]] == [
        ("alice", "job:brief", proposal.pk, f"approval of proposal #{proposal.pk}"),
        ("alice", "job:brief", proposal.pk, f"undo of proposal #{proposal.pk}"),
    ]


def test_blame_names_the_version_and_proposal_of_each_line(master, workspace):
    notes.write_memory(master, "- owner line\n")
    _, proposal = add_memory_lines_or_propose(master, ["job line"], source="job:brief")
    actions.approve(proposal, by="alice")
    notes.append_memory_lines(master, ["present line"])

    lines = history.blame("MEMORY.md")
    assert [line.text for line in lines] == ["- owner line", "job line", "present line"]
    assert lines[0].version.proposal_id is None
    assert lines[1].version.proposal_id == proposal.pk
    assert lines[2].version.seq == lines[1].version.seq + 1
    (workspace / "MEMORY.md").write_text("- owner line\njob line\npresent line\nby hand\n")
    assert history.blame("MEMORY.md")[3].version is None  # not recorded yet


def test_prune_keeps_the_newest_and_every_kept_version_readable(master, workspace):
    for n in range(50):
        notes.write_memory(master, f"- text {n}\n")
    old = timezone.now() - dt.timedelta(days=400)
    FileVersion.objects.filter(path="MEMORY.md", seq__lte=40).update(created_at=old)
    kept_before = {v.seq: history.content(v) for v in FileVersion.objects.filter(seq__gt=40)}

    deleted = history.prune(days=365)

    assert deleted == 40
    rows = list(FileVersion.objects.filter(path="MEMORY.md").order_by("seq"))
    assert rows[0].seq == 41 and rows[0].storage == "full"
    assert {v.seq: history.content(v) for v in rows} == kept_before


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_lose_no_version(master, workspace):
    """Eight threads rewrite and append to MEMORY.md at once: every change is a version,
    numbered without a gap, and each version's text is one some writer produced."""
    threads, rounds = 8, 15
    barrier = threading.Barrier(threads)
    errors = []
    # The agent's empty MEMORY.md may have been recorded when the fixture created it.
    before = FileVersion.objects.filter(path="MEMORY.md").count()

    def work(t: int) -> None:
        try:
            barrier.wait()
            for i in range(rounds):
                if i % 2:
                    notes.append_memory_lines(master, [f"t{t}-{i}"])
                else:
                    notes.write_memory(master, f"- rewritten by {t} at {i}\n")
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    assert errors == []
    rows = list(FileVersion.objects.filter(path="MEMORY.md").order_by("seq"))
    assert [r.seq for r in rows] == list(range(1, len(rows) + 1))
    assert len(rows) == before + threads * rounds
    assert all(r.op == "write" for r in rows)  # append_memory_lines rewrites under the lock
    assert history.content(rows[-1]) == (workspace / "MEMORY.md").read_bytes()
    for row in rows[before:]:
        text = history.content(row).decode()
        assert text.startswith("- rewritten by ")


@pytest.fixture
def owner_key(transactional_db, workspace):
    from memory.agents import default_agent

    default_agent()
    user = get_user_model().objects.create_superuser("alice", "a@example.com", "pw-alice-123")
    _, key = ApiToken.issue(user=user)
    return key


def test_restore_happens_once_under_twelve_concurrent_requests(live_server, owner_key, workspace):
    headers = {"Authorization": f"Token {owner_key}"}
    base = live_server.url
    with httpx.Client(timeout=60, headers=headers) as client:
        for text in ("- first\n", "- second\n"):
            body = client.get(f"{base}/api/agents/master/memory").json()
            assert (
                client.put(f"{base}/api/agents/master/memory", json={"body": text}).status_code
                == 200
            )
        versions = client.get(f"{base}/api/memory/history", params={"path": "MEMORY.md"}).json()
        # The first write makes MEMORY.md (SPEC §1: nothing empty before it).
        first = next(v for v in versions if v["seq"] == 1)
        detail = client.get(f"{base}/api/memory/history/{first['id']}").json()
        assert detail["text"] == "- first\n" and detail["replaced"] is None  # there was none
        current = detail["current_hash"]
    del body

    barrier = threading.Barrier(12)
    answers: list = [None] * 12

    def restore(i: int) -> None:
        with httpx.Client(timeout=60, headers=headers) as client:
            barrier.wait()
            answers[i] = client.post(
                f"{base}/api/memory/history/{first['id']}/restore", json={"base_hash": current}
            )

    pool = [threading.Thread(target=restore, args=(i,)) for i in range(12)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()

    codes = sorted(answer.status_code for answer in answers)
    assert codes == [200] + [409] * 11
    assert (workspace / "MEMORY.md").read_text() == "- first\n"
    assert FileVersion.objects.filter(path="MEMORY.md", op="restore").count() == 1
    restored = FileVersion.objects.get(path="MEMORY.md", op="restore")
    assert restored.actor == "alice" and restored.via == "api"


def test_the_history_api_is_the_owners(owner_client, master_client, master, workspace):
    notes.write_memory(master, "- x\n")
    assert owner_client.get("/api/memory/history", {"path": "MEMORY.md"}).status_code == 200
    assert master_client.get("/api/memory/history", {"path": "MEMORY.md"}).status_code == 403
    assert owner_client.get("/api/memory/history", {"path": "../etc"}).status_code == 422
    assert owner_client.get("/api/memory/history").status_code == 422
    rows = owner_client.get("/api/memory/history", {"agent": "master"}).json()
    assert rows and all(row["agent"] == "master" for row in rows)
    blame = owner_client.get("/api/memory/blame", {"path": "MEMORY.md"}).json()
    assert blame["lines"][0]["text"] == "- x" and blame["lines"][0]["seq"] == 1
    version = rows[0]["id"]
    answer = owner_client.post(f"/api/memory/history/{version}/restore", {}, format="json")
    assert answer.status_code == 422


def test_an_agent_tool_write_is_attributed_to_the_agent(master_client, master, workspace):
    answer = master_client.post(
        "/api/agents/master/tools/memory_save", {"text": "from a tool"}, format="json"
    )
    assert answer.status_code == 200
    row = FileVersion.objects.filter(path__startswith="memory/").latest("id")
    assert (row.actor, row.source, row.via) == ("agent:master", "http", "tool")


def _whole_text_stats(before: bytes, after: bytes) -> tuple[int, int]:
    old, new = before.decode().splitlines(), after.decode().splitlines()
    return textdiff.changed_line_count(textdiff.line_opcodes(old, new, seconds=5))


def test_line_stats_of_a_large_file_count_what_the_whole_text_diff_counts():
    """The line counts skip the lines both texts begin and end with, and still say what a
    diff of the whole texts says (a line changed, added, removed; at either end; a text
    without a final newline; a line only part of which changed)."""
    lines = [f"- [fact-{n:05d}](fact-{n:05d}.md) (reference) line {n}" for n in range(3000)]
    base = "\n".join(lines) + "\n"
    edits = [
        base.replace("line 1500\n", "line 1500 changed\n"),
        base.replace("line 1500\n", "line 1500\n- a new line\n"),
        base.replace(lines[1500] + "\n", ""),
        "- first\n" + base,
        base + "- last\n",
        base[:-1],
        base.replace("line 0\n", "line zero\n"),
        base.replace(lines[2999] + "\n", "- changed last\n"),
        "",
    ]
    for after in edits:
        old, new = base.encode(), after.encode()
        assert history._line_stats(old, new) == _whole_text_stats(old, new)
        assert history._line_stats(new, old) == _whole_text_stats(new, old)
