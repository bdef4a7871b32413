"""The host's keeper of the search index, and how a query uses the index it keeps
(SPEC §6.1; docs/search.md, docs/operations.md).

One keeper per host, whatever runs there: the first process to take the store's
keeper.lock — `manage.py memory_index`, which `make run` (bin/serve) starts beside the web
server, else any process that searches (a web worker, a stdio MCP server), in a thread of
its own; when it ends, the next process waiting for the lock takes over. The keeper:

- builds the index in the background when there is none usable (the first start, one
  found broken, one built for other rules), saying how far it is ("indexing, N of M
  files") in the store's state.json, which /healthz and the doctor read;
- watches the memory folders with inotify (watchdog) and records every hand edit in the
  change log after a short quiet spell (WATCH_QUIET_SECONDS), so every process of every
  host catches up at its next query — a hand edit is in search within about a second
  (WATCH_BOUND_SECONDS is what it promises). Where no watch is possible (a network
  filesystem, inotify refused) it stats every file every MEMORY_SEARCH_RECONCILE_SECONDS
  instead, and says so;
- applies the change log to the index in short batches (memory.search_index.BATCH_PATHS
  files a transaction): a large hand edit (a folder of notes copied in) is caught up
  without any reader waiting;
- merges the b-trees those writes add to the index's tables (search_index.compact), so a
  query reads few;
- removes the generations nobody reads any more.

A query (`with_index`) never depends on it being there: it uses the current index when
there is one (caught up from the change log first), and answers from the files when there
is none usable — slower, the same hits, never an error of the index's.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import socket
import sqlite3
import threading
import time
import unicodedata
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TypeVar

from django.conf import settings

from memory import search_index, search_store, workspace
from memory.errors import PathRefused

logger = logging.getLogger(__name__)

T = TypeVar("T")

TICK_SECONDS = 0.2  # how often the keeper looks at the change log
WATCH_QUIET_SECONDS = 0.3  # a hand edit is recorded once its files were quiet this long…
WATCH_MAX_DELAY_SECONDS = 1.0  # …or this long after its first event, whichever comes first
WATCH_BOUND_SECONDS = 2.0  # what a watched host promises for a hand edit (SPEC §6.1)
# With a watch, a stat of every file still runs this often: inotify can drop events
# (its queue overflows) and the keeper may have been down while files changed.
WATCH_RECONCILE_SECONDS = 600.0
RETIRE_EVERY_SECONDS = 30.0
# How often the keeper merges the b-trees writes added to the index (search_index.compact),
# and for how long at most in one tick while some are left.
COMPACT_EVERY_SECONDS = 10.0
COMPACT_STEP_SECONDS = 0.1
# A query that would read more files than the keeper's build has left waits for the build
# at most this long (then reads the files after all).
BUILD_WAIT_SECONDS = 300.0
# File systems where inotify sees only this host's changes, or none: poll instead.
NETWORK_FILESYSTEMS = {
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "smbfs",
    "9p",
    "ceph",
    "glusterfs",
    "afs",
    "lustre",
    "gpfs",
    "beegfs",
    "virtiofs",
    "fuse.sshfs",
    "fuse.rclone",
    "fuse.s3fs",
    "fuse.gcsfuse",
    "fuse.glusterfs",
    "fuse.cephfs",
}


def background() -> bool:
    """Whether this process helps keep the index in the background (MEMORY_SEARCH_KEEPER is
    not `off`). When it is off, a query that finds no index builds it itself, first."""
    return str(settings.MEMORY_SEARCH_KEEPER).lower() != "off"


# --- how a query uses the index ---------------------------------------------------------

_from_files_lock = threading.Lock()


def with_index(scope_dirs: Collection[str], work: Callable[[search_index.Index], T]) -> T:
    """`work(index)` on this host's index, caught up first; when there is no usable index
    (being built, found broken) or it breaks during the query, on an index of just these
    scopes built from the files — slower, the same hits, never an error of the index's."""
    ensure()
    index = _current_or_none()
    if index is not None:
        try:
            search_index.catch_up(index, scopes=scope_dirs)
            answer = work(index)
        except sqlite3.DatabaseError as exc:
            index.close()
            if search_index.is_broken(exc):
                search_index.report_broken(index.generation, exc)
            else:
                logger.warning("search: the index failed (%s); answering from the files", exc)
        except BaseException:
            index.close()
            raise
        else:
            search_index.checkin(index)
            return answer
    found = search_index.scan_all(set(scope_dirs))
    index = _built_sooner(len(found))
    if index is not None:
        try:
            return work(index)
        finally:
            search_index.checkin(index)
    # One query at a time builds from the files in this process: the others wait for it
    # rather than each holding a copy of the same files in memory at once.
    with _from_files_lock:
        fallback = search_index.from_files(scope_dirs, found=found)
        try:
            return work(fallback)
        finally:
            fallback.close()
            _give_back_memory()


def _give_back_memory() -> None:
    """Hand the memory of an index built from the files back to the system (glibc keeps
    freed memory for the process otherwise: a worker would stay as large as its biggest
    such query)."""
    global _libc
    try:
        if _libc is None:
            _libc = ctypes.CDLL("libc.so.6")
        _libc.malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        _libc = False


_libc = None


def _built_sooner(files: int) -> search_index.Index | None:
    """When the keeper's build has fewer files left than this query would read from the
    files (the owner's search over every agent, early in a build), the index it is about to
    switch to — waited for — else None."""
    directory = search_store.store_dir()
    state, age = search_store.read_state(directory)
    if age is None or age >= search_store.KEEPER_GONE_SECONDS:
        return None
    if state.get("state") != "indexing" or not state.get("of"):
        return None
    if int(state["of"]) - int(state.get("done", 0)) > files:
        return None
    deadline = time.monotonic() + BUILD_WAIT_SECONDS
    while time.monotonic() < deadline:
        if search_store.current(directory) is not None:
            try:
                index = search_index.checkout()
            except search_index.IndexMissing:
                return None
            search_index.catch_up(index)
            return index
        if not search_store.keeper_alive(directory):
            return None
        time.sleep(0.1)
    return None


def _current_or_none() -> search_index.Index | None:
    try:
        return search_index.checkout()
    except search_index.IndexMissing as missing:
        if background():
            logger.debug("search: no index to use (%s); answering from the files", missing)
            return None
    # No keeper in this process (MEMORY_SEARCH_KEEPER=off): build it now, then use it.
    search_index.build()
    try:
        return search_index.checkout()
    except search_index.IndexMissing:
        return None


# --- which process keeps the index ------------------------------------------------------

_contenders: dict[Path, threading.Thread] = {}
_contenders_lock = threading.Lock()


def ensure() -> None:
    """Make sure this host's index has a keeper: in this process, a thread waits for the
    keeper lock and keeps the index once it holds it (another process may hold it already:
    the thread then waits, and takes over when that one ends). Costs a dict lookup once
    started. Nothing when MEMORY_SEARCH_KEEPER is `off`."""
    if not background():
        return
    directory = search_store.store_dir()
    if directory in _contenders:
        return
    with _contenders_lock:
        if directory in _contenders:
            return
        search_store.ensure_dir()
        thread = threading.Thread(
            target=_contend,
            args=(directory, str(workspace.root())),
            name="search-keeper",
            daemon=True,
        )
        _contenders[directory] = thread
    thread.start()


def _contend(directory: Path, root: str) -> None:
    fd = search_store.keeper_lock(directory, wait=True)
    try:
        if str(workspace.root()) != root:
            return  # the process moved on to another workspace (tests)
        Keeper(directory).run(threading.Event())
    except Exception:  # noqa: BLE001 — queries keep working without a keeper
        logger.exception("search: the index keeper stopped")
    finally:
        if fd is not None:
            os.close(fd)
        with _contenders_lock:
            _contenders.pop(directory, None)


# --- the keeper -----------------------------------------------------------------------


def watch_possible(path: Path) -> tuple[bool, str]:
    """Whether inotify can see every change of files below `path`, and why not: the file
    system `path` is on (/proc/self/mountinfo), a network one seeing only this host's."""
    fstype = filesystem_of(path)
    if fstype in NETWORK_FILESYSTEMS:
        return False, f"the workspace is on {fstype} (a network file system)"
    return True, f"inotify on {fstype or 'a local file system'}"


def filesystem_of(path: Path) -> str:
    """The file system type of the mount holding `path` ("" when it cannot be told)."""
    best, fstype = -1, ""
    target = str(path)
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as handle:
            lines = handle.readlines()
    except OSError:
        return ""
    for line in lines:
        left, _, right = line.partition(" - ")
        fields = left.split()
        if len(fields) < 5 or not right:
            continue
        mount = fields[4].replace("\\040", " ")
        if (target == mount or target.startswith(mount.rstrip("/") + "/")) and len(mount) > best:
            best, fstype = len(mount), right.split()[0]
    return fstype


class Keeper:
    """Keeps one host's index of the current workspace (the caller holds the keeper lock)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.root = workspace.root()
        self.index: search_index.Index | None = None
        self.watch: _Watch | None = None
        self.state: dict = {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "state": "starting",
            "watch": "poll",
            "why": "",
            "bound_seconds": float(settings.MEMORY_SEARCH_RECONCILE_SECONDS),
        }
        self.checked: set[str] = set()
        self.retired_at = 0.0
        self.compact_at = 0.0

    # -- the loop --

    def run(self, stop: threading.Event) -> None:
        """Keep the index until `stop` is set: watch (or poll), build when there is no
        usable index, apply the change log, retire old generations."""
        # The watch first: the first state this keeper publishes already says how hand
        # edits are found (its heartbeat said "poll" while the watch was being set up).
        self._start_watch()
        beat = threading.Thread(target=self._beat, args=(stop,), name="search-beat", daemon=True)
        beat.start()
        try:
            while not stop.is_set():
                try:
                    self.tick()
                except Exception as exc:  # noqa: BLE001 — the next tick tries again
                    if search_index.is_broken(exc) and self.index is not None:
                        search_index.report_broken(self.index.generation, exc)
                    else:
                        logger.exception("search: the keeper's tick failed")
                    self._close()
                    stop.wait(1.0)
                stop.wait(TICK_SECONDS)
        finally:
            if self.watch is not None:
                self.watch.stop()
            self._close()
            self.state["state"] = "stopped"
            with contextlib.suppress(OSError):
                search_store.write_state(self.state, self.directory)

    def tick(self) -> None:
        index = self._open()
        if index is None:
            self.build()
            return
        if index.generation not in self.checked:
            self.checked.add(index.generation)
            if not self._sound(index):
                return
        search_index.apply_changes(index, background=True)
        if self.watch is None or self.watch.overflowed.is_set():
            bound = float(settings.MEMORY_SEARCH_RECONCILE_SECONDS) / 2
        else:
            bound = WATCH_RECONCILE_SECONDS
        age = (time.time_ns() - int(index.meta("reconciled_ns") or 0)) / 1e9
        if age >= bound:
            if self.watch is not None:
                self.watch.overflowed.clear()
            search_index.reconcile(index, background=True)
        self.state.update(state="ready", generation=index.generation)
        self.state.pop("done", None)
        self.state.pop("of", None)
        self._compact(index)
        if time.monotonic() - self.retired_at > RETIRE_EVERY_SECONDS:
            self.retired_at = time.monotonic()
            search_store.retire_unused(self.directory)
            index.db.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def _compact(self, index: search_index.Index) -> None:
        """Merge what writes added to the index, a step at a time (search_index.compact)."""
        if time.monotonic() < self.compact_at:
            return
        try:
            more = search_index.compact(index, seconds=COMPACT_STEP_SECONDS)
        except sqlite3.OperationalError as exc:  # a full disk, a writer holding the lock
            logger.warning("search: merging the index's b-trees failed, later again: %s", exc)
            more = False
        self.compact_at = time.monotonic() + (0.0 if more else COMPACT_EVERY_SECONDS)

    def build(self) -> search_index.BuildReport:
        """Build a new generation now, saying how far it is."""
        self.state.update(state="indexing", done=0, of=0)

        def progress(done: int, total: int) -> None:
            self.state.update(done=done, of=total)

        report = search_index.build(progress=progress)
        logger.info(
            "search: index %s built: %s files, %s entries in %.1f s",
            report.generation,
            report.files,
            report.entries,
            report.seconds,
        )
        self.state.update(state="ready", generation=report.generation, built_in=report.seconds)
        return report

    def _open(self) -> search_index.Index | None:
        current = search_store.current(self.directory)
        if self.index is not None and self.index.generation == current:
            return self.index
        self._close()
        try:
            self.index = search_index.open_current(busy_ms=search_index.KEEPER_BUSY_MS)
        except search_index.IndexMissing:
            return None
        return self.index

    def _sound(self, index: search_index.Index) -> bool:
        """A look at every page of a generation the keeper starts with (a crash, a full
        disk or a hand may have damaged it while nobody looked)."""
        try:
            ok = index.db.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        except sqlite3.DatabaseError as exc:
            if not search_index.is_broken(exc):
                raise
            ok = False
        if not ok:
            search_index.report_broken(index.generation, "PRAGMA quick_check failed")
            self._close()
        return ok

    def _close(self) -> None:
        if self.index is not None:
            self.index.close()
            self.index = None

    def _beat(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.state["at"] = time.time()
            try:
                search_store.write_state(dict(self.state), self.directory)
            except OSError as exc:
                logger.warning("search: the keeper cannot write its state: %s", exc)
            stop.wait(search_store.HEARTBEAT_SECONDS)

    # -- the watch --

    def _start_watch(self) -> None:
        mode = str(settings.MEMORY_SEARCH_WATCH).lower()
        bound = float(settings.MEMORY_SEARCH_RECONCILE_SECONDS)
        if mode == "poll":
            self.state.update(watch="poll", why="MEMORY_SEARCH_WATCH=poll", bound_seconds=bound)
            return
        possible, why = watch_possible(self.root)
        if not possible:
            self.state.update(watch="poll", why=why, bound_seconds=bound)
            return
        try:
            self.watch = _Watch(self)
        except (OSError, ImportError) as exc:
            self.state.update(watch="poll", why=f"inotify refused: {exc}", bound_seconds=bound)
            return
        self.state.update(watch="inotify", why=why, bound_seconds=WATCH_BOUND_SECONDS)

    def hand_edits(self, paths: set[str]) -> None:
        """Record the workspace paths a watch saw change in the change log — those whose
        stat differs from what the index holds (the app's own writes are there already)."""
        index = self.index
        changed = []
        for rel in sorted(paths):
            if index is not None:
                try:
                    key = workspace.stamp(rel)
                except (PathRefused, OSError):
                    key = None
                with contextlib.suppress(sqlite3.Error):
                    if key is not None and search_index.indexed_key(index, rel) == tuple(key):
                        continue
            changed.append(rel)
        if changed:
            workspace.record_changes(changed)


class _Watch:
    """inotify watches (watchdog) on the folders search reads, debounced into batches of
    workspace paths handed to the keeper."""

    def __init__(self, keeper: Keeper) -> None:
        # Late: inotify exists only on Linux; elsewhere the keeper polls (§6.1).
        from watchdog.observers.inotify import InotifyObserver  # noqa: PLC0415

        self.keeper = keeper
        self.root = str(keeper.root)
        self.overflowed = threading.Event()
        self.pending: dict[str, float] = {}
        self.first_at = 0.0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.observer = InotifyObserver()
        self.watches: dict[str, object] = {}
        self.plan()
        self.observer.start()
        self.flusher = threading.Thread(target=self._flush_loop, name="search-watch", daemon=True)
        self.flusher.start()

    def plan(self) -> None:
        """Watch each folder search reads (and the folders new ones appear in), not the
        whole workspace: an OpenClaw workspace holds code folders nobody searches."""
        from watchdog import events  # noqa: PLC0415  (with the inotify observer above)

        handler = self._handler_class(events.FileSystemEventHandler)(self)
        # Changes only: never the opens and reads of every file search itself makes (they
        # would fill inotify's queue under load, and say nothing).
        changes = [
            events.FileCreatedEvent,
            events.DirCreatedEvent,
            events.FileModifiedEvent,
            events.FileClosedEvent,
            events.FileMovedEvent,
            events.DirMovedEvent,
            events.FileDeletedEvent,
            events.DirDeletedEvent,
        ]
        wanted: dict[str, bool] = {self.root: False}
        for rel, recursive in (("memory", True), ("agents", False), ("users/owner/facts", False)):
            wanted[os.path.join(self.root, rel)] = recursive
        for rel in search_index.user_file_candidates():  # USER.md, wherever it may be
            wanted.setdefault(os.path.dirname(os.path.join(self.root, rel)), False)
        with contextlib.suppress(OSError, PathRefused):
            for name in workspace.list_dirs("agents"):
                wanted[os.path.join(self.root, "agents", name)] = False
                wanted[os.path.join(self.root, "agents", name, "memory")] = True
        for extra in workspace.extra_roots():
            if not extra.problem:
                wanted[
                    os.path.dirname(extra.path) if extra.is_file else extra.path
                ] = not extra.is_file
        for path, recursive in wanted.items():
            if path in self.watches or not os.path.isdir(path) or os.path.islink(path):
                continue
            try:
                self.watches[path] = self.observer.schedule(
                    handler, path, recursive=recursive, event_filter=changes
                )
            except OSError as exc:
                logger.warning("search: cannot watch %s (%s): polling covers it", path, exc)
                self.overflowed.set()

    @staticmethod
    def _handler_class(base: type) -> type:
        class Handler(base):  # type: ignore[misc, valid-type]
            def __init__(self, watch: _Watch) -> None:
                super().__init__()
                self.watch = watch

            def on_any_event(self, event) -> None:  # noqa: ANN001 — watchdog's event
                if event.event_type in ("opened", "closed_no_write"):
                    return
                self.watch.saw(event.src_path, event.is_directory)
                dest = getattr(event, "dest_path", "")
                if dest:
                    self.watch.saw(dest, event.is_directory)

        return Handler

    def saw(self, path: str | bytes, is_directory: bool) -> None:
        path = os.fsdecode(path)
        now = time.monotonic()
        with self.lock:
            if not self.pending:
                self.first_at = now
            self.pending[path] = now
            if is_directory:
                self.pending[path + os.sep] = now

    def _flush_loop(self) -> None:
        while not self.stopping.wait(0.05):
            with self.lock:
                if not self.pending:
                    continue
                now = time.monotonic()
                quiet = now - max(self.pending.values()) >= WATCH_QUIET_SECONDS
                if not quiet and now - self.first_at < WATCH_MAX_DELAY_SECONDS:
                    continue
                batch, self.pending = self.pending, {}
            try:
                self._flush(set(batch))
            except Exception:  # noqa: BLE001 — the periodic stat check covers what is lost
                logger.exception("search: recording hand edits failed")
                self.overflowed.set()

    def _flush(self, paths: set[str]) -> None:
        rels: set[str] = set()
        folders = False
        for path in paths:
            if path.endswith(os.sep):
                folders = True
                rels |= self._below(path.rstrip(os.sep))
                continue
            rel = self._relative(path)
            if rel is not None and search_index.scope_of(rel) is not None:
                rels.add(rel)
        if folders:
            self.plan()  # a new agent, or its memory/ folder
        self.keeper.hand_edits(rels)

    def _relative(self, path: str) -> str | None:
        if path.startswith(self.root + os.sep):
            rel = path[len(self.root) + 1 :].replace(os.sep, "/")
            return unicodedata.normalize("NFC", rel)
        for extra in workspace.extra_roots():
            if extra.problem:
                continue
            if extra.is_file and path == extra.path:
                return f"{workspace.EXTRA_PREFIX}/{extra.name}"
            if not extra.is_file and path.startswith(extra.path.rstrip(os.sep) + os.sep):
                below = path[len(extra.path.rstrip(os.sep)) + 1 :].replace(os.sep, "/")
                below = unicodedata.normalize("NFC", below)
                return f"{workspace.EXTRA_PREFIX}/{extra.name}/{below}"
        return None

    def _below(self, folder: str) -> set[str]:
        """Every searched path below a folder that appeared, went or moved: what is there
        now (a folder copied in) and what the index holds there (a folder removed)."""
        rel = self._relative(folder)
        if rel is None:
            return set()
        found = {
            path
            for path in search_index.scan_all()
            if path.startswith(rel + "/") and search_index.scope_of(path) is not None
        }
        index = self.keeper.index
        if index is not None:
            with contextlib.suppress(sqlite3.Error):
                found |= {
                    row[0]
                    for row in index.db.execute(
                        "SELECT path FROM files WHERE substr(path, 1, ?) = ?",
                        (len(rel) + 1, rel + "/"),
                    )
                }
        return found

    def stop(self) -> None:
        self.stopping.set()
        self.observer.stop()
        self.observer.join(timeout=5)


def keep_forever() -> None:
    """`manage.py memory_index`: wait for this host's keeper lock, then keep the index until
    the process is stopped."""
    directory = search_store.ensure_dir()
    fd = search_store.keeper_lock(directory, wait=True)
    try:
        Keeper(directory).run(threading.Event())
    finally:
        if fd is not None:
            os.close(fd)


def status() -> dict:
    """What /healthz and the doctor say of the index: whether a keeper is alive, how hand
    edits are found and how soon, and whether the index is ready or being built ("indexing,
    N of M files") — read from the store, never built or written here."""
    directory = search_store.store_dir()
    state, age = search_store.read_state(directory)
    alive = age is not None and age < search_store.KEEPER_GONE_SECONDS
    generation = search_store.current(directory)
    report: dict = {
        "ok": True,
        "keeper": alive,
        "index": "ready" if generation else "missing",
        "hand_edits": state.get("watch", "poll") if alive else "query",
        "hand_edit_bound_seconds": float(
            state.get("bound_seconds", settings.MEMORY_SEARCH_RECONCILE_SECONDS)
            if alive
            else settings.MEMORY_SEARCH_RECONCILE_SECONDS
        ),
    }
    if alive and state.get("state") == "indexing":
        report["index"] = "indexing"
        report["files_done"] = int(state.get("done", 0))
        report["files"] = int(state.get("of", 0))
    if alive and state.get("why"):
        report["why"] = state["why"]
    report["message"] = _message(report)
    return report


def _message(report: dict) -> str:
    if report["index"] == "indexing" and not report["files"]:
        where = "indexing: listing the files; search answers from the files meanwhile"
    elif report["index"] == "indexing":
        where = f"indexing, {report['files_done']:,} of {report['files']:,} files"
    elif report["index"] == "missing":
        where = "no index yet: search answers from the files"
    else:
        where = "ready"
    how = {
        "inotify": "hand edits watched (inotify)",
        "poll": "hand edits found by a stat of every file",
        "query": "no keeper running: hand edits found by queries",
    }.get(report["hand_edits"], report["hand_edits"])
    return f"{where}; {how}, within {report['hand_edit_bound_seconds']:g} s"
