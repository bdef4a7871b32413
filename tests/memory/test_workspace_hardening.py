"""The workspace's write, read and lock internals under what real disks and real
workspaces hand it (SPEC §1): whole appends,
modes, bytes that are not UTF-8, CRLF and BOM, NFD names, long names, lone surrogates, a
bounded lock pool, stale temp files."""

from __future__ import annotations

import errno
import os
import re
import stat
import threading
import time
import unicodedata

import pytest

from memory import workspace as ws
from memory.errors import DiskFull, InvalidInput, PathRefused
from memory.workspace import locks
from memory.workspace.paths import check_relative


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


# --- modes (10.9) --------------------------------------------------------------------


def test_a_rewrite_keeps_the_files_mode(workspace):
    ws.write("MEMORY.md", "- one\n")
    os.chmod(workspace / "MEMORY.md", 0o644)
    ws.write("MEMORY.md", "- two\n")
    assert _mode(workspace / "MEMORY.md") == 0o644
    os.chmod(workspace / "MEMORY.md", 0o640)
    ws.write_checked("MEMORY.md", "- three\n", base_hash=ws.hash_text("- two\n"))
    assert _mode(workspace / "MEMORY.md") == 0o640
    assert (workspace / "MEMORY.md").read_text() == "- three\n"


def test_a_new_file_gets_0666_less_the_umask(workspace, umask_022):
    ws.write("users/owner/USER.md", "Minh\n")
    ws.append("memory/2026-11-30.md", "- 08:00 x\n", create_with="# 2026-11-30\n\n")
    assert _mode(workspace / "users/owner/USER.md") == 0o644
    assert _mode(workspace / "memory/2026-11-30.md") == 0o644
    os.umask(0o002)
    ws.write("memory/other.md", "x\n")
    assert _mode(workspace / "memory/other.md") == 0o664


def test_an_append_keeps_the_mode_of_the_note(workspace):
    (workspace / "memory").mkdir()
    note = workspace / "memory/2026-11-30.md"
    note.write_text("# 2026-11-30\n\n")
    os.chmod(note, 0o664)
    ws.append("memory/2026-11-30.md", "- 08:00 x\n")
    assert _mode(note) == 0o664


# --- appends are whole or absent (10.5) --------------------------------------------------


def test_a_short_write_leaves_the_note_exactly_as_it_was(workspace, monkeypatch):
    ws.append("memory/2026-11-30.md", "- 08:00 first\n", create_with="# 2026-11-30\n\n")
    before = (workspace / "memory/2026-11-30.md").read_bytes()
    real_write = os.write

    def half_then_stop(fd, data):
        # What a disk that fills up mid-line does: part of the buffer lands.
        return real_write(fd, bytes(data)[: len(data) // 3])

    monkeypatch.setattr(os, "write", half_then_stop)
    with pytest.raises(DiskFull) as raised:
        ws.append("memory/2026-11-30.md", "- 08:01 " + "đọc sách " * 400 + "\n")
    monkeypatch.undo()
    assert (workspace / "memory/2026-11-30.md").read_bytes() == before
    assert "full" in raised.value.message and "memory/2026-11-30.md" in raised.value.message
    assert raised.value.status_code == 507


def test_an_enospc_from_fsync_takes_the_appended_bytes_back(workspace, monkeypatch):
    ws.append("memory/2026-11-30.md", "- 08:00 first\n", create_with="# 2026-11-30\n\n")
    before = (workspace / "memory/2026-11-30.md").read_bytes()

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device (injected)")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(DiskFull):
        ws.append("memory/2026-11-30.md", "- 08:01 second\n")
    monkeypatch.undo()
    assert (workspace / "memory/2026-11-30.md").read_bytes() == before


def test_a_rewrite_that_hits_a_full_disk_is_disk_full_and_leaves_no_temp_file(
    workspace, monkeypatch
):
    ws.write("MEMORY.md", "old\n")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device (injected)")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(DiskFull):
        ws.write("MEMORY.md", "new\n")
    monkeypatch.undo()
    assert (workspace / "MEMORY.md").read_text() == "old\n"
    assert sorted(p.name for p in workspace.iterdir() if p.is_file()) == ["MEMORY.md"]


# --- bytes that are not UTF-8 (10.6) -----------------------------------------------------


def test_undecodable_bytes_read_as_replacement_and_say_so(workspace):
    (workspace / "users/owner").mkdir(parents=True)
    (workspace / "users/owner/USER.md").write_bytes(b"Caf\xe9 au lait\n")
    assert ws.read("users/owner/USER.md") == "Caf\ufffd au lait\n"
    found = ws.read_file("users/owner/USER.md")
    assert found.invalid_utf8 is True
    # The hash is of the bytes: two different bad bytes are two different files.
    assert found.hash != ws.hash_text(found.text)
    text, digest = ws.read_with_hash("users/owner/USER.md")
    assert digest == found.hash == ws.file_hash("users/owner/USER.md")


def test_an_append_into_a_file_with_undecodable_bytes_keeps_them(workspace):
    (workspace / "memory").mkdir()
    (workspace / "memory/2026-11-30.md").write_bytes(b"# 2026-11-30\n\n- caf\xe9\n")
    ws.append("memory/2026-11-30.md", "- 09:00 more\n")
    assert (workspace / "memory/2026-11-30.md").read_bytes() == (
        b"# 2026-11-30\n\n- caf\xe9\n- 09:00 more\n"
    )


# --- line endings and BOM ------------------------------------------------------------------


def test_a_crlf_file_stays_crlf_on_a_rewrite_and_reads_as_lf(workspace):
    (workspace / "MEMORY.md").write_bytes(b"- one\r\n- two\r\n")
    assert ws.read("MEMORY.md") == "- one\n- two\n"
    ws.write("MEMORY.md", "- one\n- two\n- three\n")
    assert (workspace / "MEMORY.md").read_bytes() == b"- one\r\n- two\r\n- three\r\n"
    assert ws.file_hash("MEMORY.md") == ws.hash_text("- one\n- two\n- three\n")


def test_an_append_into_a_crlf_note_uses_crlf(workspace):
    (workspace / "memory").mkdir()
    (workspace / "memory/2026-11-30.md").write_bytes(b"# 2026-11-30\r\n\r\n- 08:00 a")
    ws.append("memory/2026-11-30.md", "- 09:00 b\n")
    assert (workspace / "memory/2026-11-30.md").read_bytes() == (
        b"# 2026-11-30\r\n\r\n- 08:00 a\r\n- 09:00 b\r\n"
    )


def test_a_bom_is_kept_on_disk_and_never_read(workspace):
    (workspace / "MEMORY.md").write_bytes(b"\xef\xbb\xbf- one\n")
    assert ws.read("MEMORY.md") == "- one\n"
    ws.write("MEMORY.md", "- one\n- two\n")
    assert (workspace / "MEMORY.md").read_bytes() == b"\xef\xbb\xbf- one\n- two\n"
    ws.append("MEMORY.md", "- three\n")
    assert (workspace / "MEMORY.md").read_bytes() == b"\xef\xbb\xbf- one\n- two\n- three\n"


def test_a_new_file_is_lf_without_bom_whatever_the_text_says(workspace):
    ws.write("MEMORY.md", "\ufeff- one\r\n- two\r\n")
    assert (workspace / "MEMORY.md").read_bytes() == b"- one\n- two\n"


# --- NFD names ----------------------------------------------------------------------------

NFC_NAME = unicodedata.normalize("NFC", "sách-đang-đọc.md")
NFD_NAME = unicodedata.normalize("NFD", "sách-đang-đọc.md")


def test_an_nfd_file_is_found_by_either_spelling(workspace):
    assert NFC_NAME != NFD_NAME
    (workspace / "memory").mkdir()
    (workspace / "memory" / NFD_NAME).write_text("- Dune\n", encoding="utf-8")
    assert ws.read(f"memory/{NFC_NAME}") == "- Dune\n"
    assert ws.read(f"memory/{NFD_NAME}") == "- Dune\n"
    ws.append(f"memory/{NFC_NAME}", "- Solaris\n")
    ws.write(f"memory/{NFC_NAME}", ws.read(f"memory/{NFC_NAME}") + "- Ubik\n")
    # One file, still spelled as macOS wrote it.
    assert os.listdir(workspace / "memory") == [NFD_NAME]
    assert (workspace / "memory" / NFD_NAME).read_text() == "- Dune\n- Solaris\n- Ubik\n"
    # Listings hand out one spelling, the composed one, which reads the file.
    assert [info.path for info in ws.list_files("memory")] == [f"memory/{NFC_NAME}"]
    assert [f.path for f in ws.scan_files("memory")] == [f"memory/{NFC_NAME}"]


def test_a_new_file_is_created_composed(workspace):
    ws.write(f"memory/{NFD_NAME}", "x\n")
    assert os.listdir(workspace / "memory") == [NFC_NAME]


def test_fullwidth_characters_are_still_refused(workspace):
    with pytest.raises(PathRefused):
        ws.read("memory／x.md")


# --- names, text (10.14, 10.7) -------------------------------------------------------------


@pytest.mark.parametrize("name", ["a" * 256 + ".md", "đ" * 200 + ".md"])
def test_a_name_longer_than_255_bytes_is_refused(workspace, name):
    with pytest.raises(PathRefused, match="longer than 255 bytes"):
        ws.write(f"memory/{name}", "x\n")
    assert not (workspace / "memory").exists()


def test_a_lone_surrogate_is_invalid_input_and_writes_nothing(workspace):
    with pytest.raises(InvalidInput, match="surrogate"):
        ws.write("MEMORY.md", "bad \ud800 text\n")
    with pytest.raises(InvalidInput, match="surrogate"):
        ws.append("memory/2026-11-30.md", "- \udfff\n", create_with="# 2026-11-30\n\n")
    assert not (workspace / "MEMORY.md").exists()
    assert not (workspace / "memory/2026-11-30.md").exists()


# --- the lock pool (10.14) -----------------------------------------------------------------


def test_the_lock_directory_is_bounded_and_ignored_by_git(workspace):
    for number in range(600):
        ws.write(f"memory/file-{number}.md", "x\n")
    names = os.listdir(workspace / ws.LOCK_DIR)
    assert len(names) <= ws.FILE_STRIPES + ws.GUARD_STRIPES + 1
    assert (workspace / ws.LOCK_DIR / ".gitignore").read_text() == "*\n"


def test_prepare_makes_the_pool_and_removes_old_per_path_lock_files(workspace):
    (workspace / ws.LOCK_DIR).mkdir()
    old = workspace / ws.LOCK_DIR / ("a" * 40 + ".lock")
    old.write_bytes(b"")
    ws.prepare()
    names = set(os.listdir(workspace / ws.LOCK_DIR))
    assert old.name not in names
    assert len(names) == ws.FILE_STRIPES + ws.GUARD_STRIPES + 1
    assert ".gitignore" in names
    # The derived state (facts index, wiki change lists) is machinery too: not in git.
    assert (workspace / ".memory-state" / ".gitignore").read_text() == "*\n"


def test_reading_never_creates_a_lock_file(workspace):
    (workspace / "MEMORY.md").write_text("- x\n")
    assert ws.read_with_hash("MEMORY.md")[0] == "- x\n"
    assert ws.read_file_locked("MEMORY.md").text == "- x\n"
    assert sorted(os.listdir(workspace)) == ["MEMORY.md"]


def test_a_guard_is_never_taken_while_holding_a_file_lock(workspace):
    with ws.guarded("users/owner/facts"), ws.locked("users/owner/facts/a.md"):
        pass  # guard first, then files: fine
    with ws.locked("MEMORY.md"), pytest.raises(RuntimeError):
        with ws.guarded("users/owner/facts"):
            pass


def test_files_locked_together_in_opposite_orders_never_deadlock(workspace):
    paths = [f"memory/{n}.md" for n in range(40)]
    errors = []

    def worker(order):
        try:
            for _ in range(30):
                with ws.locked_many(order):
                    pass
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=worker, args=(paths,)),
        threading.Thread(target=worker, args=(list(reversed(paths)),)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []


def test_two_paths_on_one_stripe_nest_in_one_thread(workspace):
    # Find two paths that share a stripe: nesting them must not deadlock on itself.
    seen: dict[int, str] = {}
    for number in range(10_000):
        rel = f"memory/n{number}.md"
        stripe = locks.stripe("f", rel)
        if stripe in seen:
            first, second = seen[stripe], rel
            break
        seen[stripe] = rel
    with ws.locked(first):
        ws.write(second, "x\n")
    assert ws.read(second) == "x\n"


# --- stale temp files (10.14) ----------------------------------------------------------------


def test_stale_temp_files_of_killed_writes_are_removed_at_start_up(workspace):
    (workspace / "memory").mkdir()
    stale = workspace / "memory" / ".2026-11-30.md.0123456789abcdef.tmp"
    fresh = workspace / "memory" / ".MEMORY.md.fedcba9876543210.tmp"
    kept = workspace / "memory" / ".hidden-notes.md"
    for path in (stale, fresh, kept):
        path.write_text("half\n")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    os.utime(kept, (old, old))
    assert ws.remove_stale_temp_files() == ["memory/.2026-11-30.md.0123456789abcdef.tmp"]
    assert not stale.exists()
    assert fresh.exists() and kept.exists()


# --- the machinery: the change log and derived state (SPEC §1) ----------------------------


def test_a_symlinked_change_log_segment_is_never_written_through(workspace, tmp_path):
    ws.write("memory/a.md", "- one\n")
    segment = next((workspace / ws.CHANGES_DIR).glob("*.log"))
    outside = tmp_path / "outside.txt"
    outside.write_text("kept\n")
    segment.unlink()
    os.symlink(outside, segment)
    ws.write("memory/b.md", "- two\n")  # the write stands; the log refuses the link
    assert (workspace / "memory/b.md").read_text() == "- two\n"
    assert outside.read_text() == "kept\n"
    assert ws.changes_since((1, 0)) == ([], (1, 0))


def test_a_symlinked_change_log_folder_is_refused(workspace, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.symlink(outside, workspace / ws.CHANGES_DIR)
    ws.write("memory/a.md", "- one\n")
    assert list(outside.iterdir()) == []
    assert ws.changes_since((1, 0)) == ([], (1, 0))


def test_a_fifo_in_the_change_log_or_as_a_note_is_never_waited_on(workspace):
    ws.write("memory/a.md", "- one\n")
    segment = next((workspace / ws.CHANGES_DIR).glob("*.log"))
    segment.unlink()
    os.mkfifo(segment)
    os.mkfifo(workspace / "memory/pipe.md")
    started = time.monotonic()
    ws.write("memory/b.md", "- two\n")
    assert ws.changes_since((1, 0)) == ([], (1, 0))
    assert ws.read_keyed("memory/pipe.md") is None
    with pytest.raises(PathRefused, match="not a regular file"):
        ws.read("memory/pipe.md")
    assert time.monotonic() - started < 5


def test_the_change_log_reads_at_most_the_lines_asked_for(workspace):
    for n in range(5):
        ws.write(f"memory/{n}.md", "x\n")
    paths, middle = ws.changes_since((1, 0), limit=2)
    assert paths == ["memory/0.md", "memory/1.md"]
    rest, end = ws.changes_since(middle)
    assert rest == ["memory/2.md", "memory/3.md", "memory/4.md"]
    assert end == ws.changes_position()


def test_derived_state_and_the_change_log_are_this_users_only(workspace, umask_022):
    ws.prepare()
    ws.write("memory/a.md", "x\n")
    ws.write_unsynced(f"{ws.STATE_DIR}/wiki/lists.txt", "x\n")
    assert _mode(workspace / ws.STATE_DIR) == 0o700
    assert _mode(workspace / ws.STATE_DIR / "wiki") == 0o700
    assert _mode(workspace / ws.STATE_DIR / "wiki/lists.txt") == 0o600
    assert _mode(workspace / ws.CHANGES_DIR) == 0o700
    assert _mode(next((workspace / ws.CHANGES_DIR).glob("*.log"))) == 0o600


@pytest.mark.parametrize(
    ("rel", "says"),
    [
        ("", "Empty path"),
        ("memory/a\x00.md", "NUL byte"),
        ("/etc/passwd", "relative to the workspace"),
        ("C:/x.md", "relative to the workspace"),
        ("memory\\x.md", "relative to the workspace"),
        ("memory//x.md", "empty, '.' or '..' parts"),
        ("memory/./x.md", "empty, '.' or '..' parts"),
        ("memory/../x.md", "empty, '.' or '..' parts"),
        ("memory/ghi/../chép.md", "empty, '.' or '..' parts"),
        ("memory/" + "a" * 256, "longer than 255 bytes"),
        ("memory/" + "đ" * 128, "longer than 255 bytes"),
        ("/".join(["a" * 200] * 15), "longer than 3000 bytes"),
        ("/".join(["đ" * 100] * 15), "longer than 3000 bytes"),
    ],
    ids=lambda value: value[:24] if isinstance(value, str) else value,
)
def test_a_path_is_refused_for_what_is_wrong_with_it_in_ascii_or_not(rel, says):
    with pytest.raises(PathRefused, match=re.escape(says)):
        check_relative(rel)


def test_a_path_at_the_limits_is_taken_as_it_is_or_composed():
    assert check_relative("memory/" + "a" * 255) == "memory/" + "a" * 255
    longest = "/".join(["a" * 199] * 15)  # 2,999 bytes: with its end, 3,000
    assert check_relative(longest) == longest
    assert check_relative("memory/ghi-che\u0301p.md") == "memory/ghi-chép.md"
