"""The doctor (docs/decisions.md, "OpenClaw and clients"): what this app makes of a workspace,
changing nothing.

`diagnose()` reads MY_AGENT_HOME — through memory.workspace, which lists entries without
following links (`survey`) and reads without locking — and reports, as data:

- the layout it recognised: an OpenClaw workspace (root USER.md, memory.md, persona files,
  an OpenClaw memory-wiki vault, session transcripts), this app's (users/owner/…), both, or
  an empty one;
- the files it reads into the prompt (USER.md, INDEX.md, each agent's MEMORY.md), their
  sizes against the caps, and the context size before and after the caps;
- for each agent, what the pre-turn block will hold now: every note of today and
  yesterday (plain, session, slugged), newest first, each whole, cut or only named for
  memory_get within the caps (SPEC §4.2);
- every file it ignores, and why (a link, hidden, not Markdown, not UTF-8, a name that
  looks like a note but is not a day, a persona file, a file another one wins over);
- folders under `agents/` that hold memory files but have no agent yet (a folder without
  memory files is not offered: a workspace may keep code there), and what start-up
  (memory_init) would create (only its own hidden machinery: memory files and folders are
  created by the first write that needs them), and the extra paths with their state.

`render(report)` turns it into the text `python manage.py memory_doctor` prints. Nothing
here writes: no file, no lock file, no row — not even the SQLite database file, which is
not opened when it does not exist yet.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from django.db.utils import DatabaseError

from memory import agents, binding, context, facts, workspace
from memory.errors import PathRefused
from memory.models import AGENT_ID_VALIDATOR, Agent
from memory.search_keeper import status
from memory.text import FACT_NAME_RE, note_day, parse_frontmatter, parse_note_name

# What other apps find in an agent's files and want the doctor to say (registration, not
# dispatch by name: the wiki registers what it finds in a vault from WikiConfig.ready()).
# Each gets the agent and returns data merged into that agent's `wiki` report; it must
# only read.
_VAULT_CHECKS: list[Callable[..., dict]] = []


def register_vault_check(check: Callable[..., dict]) -> None:
    """Add a check of an agent's vault to the doctor's report (idempotent)."""
    if check not in _VAULT_CHECKS:
        _VAULT_CHECKS.append(check)


PERSONA_FILES = (
    "AGENTS.md",
    "SOUL.md",
    "TOOLS.md",
    "IDENTITY.md",
    "HEARTBEAT.md",
    "BOOTSTRAP.md",
)
PAGE_FOLDERS = ("entities", "concepts", "syntheses", "sources")
_DATE_LIKE = 10  # a name starting with YYYY-MM-DD


@dataclass
class PromptFile:
    """One file read into the prompt: what it is, where, how long, against which cap."""

    label: str
    path: str
    chars: int | None  # None: absent
    cap: int
    note: str = ""
    in_block: bool = False  # a note of the pre-turn block (else a system-prompt file)

    @property
    def over(self) -> bool:
        return self.chars is not None and self.chars > self.cap


@dataclass
class Ignored:
    path: str
    why: str


@dataclass
class AgentReport:
    id: str
    dir: str  # "" for the home itself
    known: bool  # a row exists (else: a folder on disk only)
    memory_file: str = ""
    prompt: list[PromptFile] = field(default_factory=list)
    system_before: int = 0
    system_after: int = 0
    pre_turn_before: int = 0
    pre_turn_after: int = 0
    pre_turn_notes: int = 0
    notes: int = 0
    note_days: int = 0
    odd_notes: list[str] = field(default_factory=list)
    transcripts: int = 0
    other_files: list[str] = field(default_factory=list)
    wiki: dict = field(default_factory=dict)


@dataclass
class Report:
    root: str
    layout: str
    signs: list[str] = field(default_factory=list)
    database: str = "ok"
    agents: list[AgentReport] = field(default_factory=list)
    ignored: list[Ignored] = field(default_factory=list)
    creates: list[str] = field(default_factory=list)
    extra: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    folders_without_memory: int = 0  # folders under agents/ holding no memory file
    search: str = ""  # the index and how soon hand edits are found (search_keeper.status)

    def as_dict(self) -> dict:
        return asdict(self)


def _present(rel: str) -> bool:
    try:
        return workspace.exists(rel)
    except PathRefused:
        return True


def _is_dir(rel: str) -> bool:
    try:
        return workspace.is_dir(rel)
    except PathRefused:
        return True  # a link there: start-up does not replace it either


def _size_of(rel: str) -> tuple[int | None, str]:
    """(characters, problem) of a file read whole: None when absent; a problem when it
    cannot be read as text (a link, bytes that are not UTF-8)."""
    try:
        text = workspace.read(rel)
    except PathRefused as exc:
        return None, exc.message
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 (byte {exc.start})"
    return (None if text is None else len(text)), ""


def _known_agents(report: Report) -> list:
    assumed = [Agent(id=agents.DEFAULT_AGENT_ID, name="Master", is_default=True)]
    if binding.database_missing():
        report.database = (
            "none yet (the first make run creates it): the default agent (the home itself) "
            "is assumed"
        )
        return assumed
    try:
        return list(Agent.objects.all())
    except DatabaseError:
        report.database = "not migrated yet: the default agent (the home itself) is assumed"
        return assumed


# --- the layout ------------------------------------------------------------------------------


def _layout(report: Report, top: list[workspace.Entry]) -> None:
    names = {entry.path: entry for entry in top}
    openclaw, ours = [], []
    if "USER.md" in names:
        openclaw.append("USER.md at the root")
    if "memory.md" in names and "MEMORY.md" not in names:
        openclaw.append("memory.md (no MEMORY.md)")
    personas = [name for name in PERSONA_FILES if name in names]
    if personas:
        openclaw.append("persona files " + ", ".join(personas))
    if ".openclaw" in names:
        openclaw.append(".openclaw/")
    if _present("memory/wiki/WIKI.md") or any(
        entry.path == "memory/wiki/.openclaw-wiki" for entry in _safe_survey("memory/wiki", False)
    ):
        openclaw.append("an OpenClaw memory-wiki vault in memory/wiki/")
    if "users" in names:
        ours.append("users/owner/ (the shared user scope)")
    if workspace.is_dir(workspace.LOCK_DIR):
        ours.append(f"{workspace.LOCK_DIR}/")
    report.signs = openclaw + ours
    if openclaw and ours:
        report.layout = "an OpenClaw workspace this app already uses"
    elif openclaw:
        report.layout = "an OpenClaw workspace, used as it is"
    elif ours:
        report.layout = "this app's workspace"
    elif top:
        report.layout = "a workspace of Markdown files (neither OpenClaw's nor this app's marks)"
    else:
        report.layout = "an empty workspace"


def _safe_survey(rel: str, recursive: bool) -> list[workspace.Entry]:
    try:
        return workspace.survey(rel, recursive=recursive)
    except PathRefused:
        return []


# --- the root and the user scope -------------------------------------------------------------


def _root_files(report: Report, top: list[workspace.Entry], default_dir_used: bool) -> None:
    user_file = ""
    try:
        user_file = facts.user_path()
    except PathRefused as exc:
        report.problems.append(f"MEMORY_USER_FILE: {exc.message}")
    for entry in top:
        name = entry.path
        if entry.kind == "symlink":
            report.ignored.append(Ignored(name, "a symbolic link: never followed"))
        elif entry.hidden:
            # OpenClaw's own folder, and the app's machinery (git-ignored, not memory).
            if name not in (".openclaw", workspace.STATE_DIR, workspace.CHANGES_DIR):
                report.ignored.append(Ignored(name, "hidden"))
        elif entry.kind != "file":
            continue
        elif name in PERSONA_FILES:
            report.ignored.append(Ignored(name, "a persona file: not memory (OpenClaw reads it)"))
        elif name == "USER.md" and user_file != "USER.md":
            report.ignored.append(Ignored(name, f"{user_file} wins over the root USER.md"))
        elif name == "memory.md" and "MEMORY.md" in {e.path for e in top}:
            report.ignored.append(Ignored(name, "MEMORY.md exists and wins over memory.md"))
        elif name in ("USER.md", "memory.md", "MEMORY.md"):
            continue
        elif name.endswith(".md") and default_dir_used:
            report.ignored.append(
                Ignored(name, "not memory: at the root only MEMORY.md and USER.md are read")
            )
    for entry in _safe_survey(facts.FACTS_DIR, False):
        stem = entry.path.rsplit("/", 1)[-1]
        if entry.kind == "symlink":
            report.ignored.append(Ignored(entry.path, "a symbolic link: never followed"))
        elif stem != facts.INDEX_NAME and not (
            stem.endswith(".md") and FACT_NAME_RE.fullmatch(stem[:-3])
        ):
            report.ignored.append(Ignored(entry.path, "not a fact: the name is not a slug"))


# --- one agent -------------------------------------------------------------------------------


def _classify_memory(report: Report, agent_report: AgentReport, memory_dir: str) -> None:
    days: set[dt.date] = set()
    prefix = f"{memory_dir}/"
    for entry in _safe_survey(memory_dir, True):
        rel = entry.path[len(prefix) :]
        if entry.kind == "symlink":
            report.ignored.append(
                Ignored(entry.path, "a symbolic link: never followed (search and lists skip it)")
            )
            continue
        if entry.hidden:
            report.ignored.append(Ignored(entry.path, "hidden"))
            continue
        if entry.kind != "file":
            continue
        if not rel.endswith(".md"):
            report.ignored.append(Ignored(entry.path, "not Markdown (.md)"))
            continue
        bad_byte = workspace.undecodable_at(entry.path)
        if bad_byte is not None:
            report.ignored.append(
                Ignored(entry.path, f"not UTF-8 from byte {bad_byte}: fix its encoding to use it")
            )
            continue
        if rel.startswith("wiki/"):
            _wiki_file(agent_report, entry.path, rel[len("wiki/") :])
            continue
        if "/" not in rel:
            parsed = note_day(rel)
            if parsed is not None:
                agent_report.notes += 1
                days.add(parsed[0])
                try:
                    parse_note_name(rel)
                except Exception:  # noqa: BLE001 - InvalidInput: an odd but real name
                    agent_report.odd_notes.append(rel)
                if (
                    len(rel) == len("YYYY-MM-DD-HHMM.md")
                    and rel[10] == "-"
                    and rel[11:15].isdigit()
                ):
                    agent_report.transcripts += 1
                continue
            if len(rel) > _DATE_LIKE and rel[:4].isdigit() and rel[4] == "-":
                report.ignored.append(
                    Ignored(
                        entry.path,
                        f"not read as a note: {rel[:10]} is not a real date (kept as a file "
                        "by hand: searched and listed)",
                    )
                )
        agent_report.other_files.append(rel)
    agent_report.note_days = len(days)


def _wiki_file(agent_report: AgentReport, path: str, rel: str) -> None:
    wiki = agent_report.wiki
    folder = rel.split("/", 1)[0] if "/" in rel else ""
    if folder in PAGE_FOLDERS and rel.count("/") == 1:
        wiki.setdefault("pages", {}).setdefault(folder, 0)
        wiki["pages"][folder] += 1
        text = workspace.read(path) or ""
        meta, _ = parse_frontmatter(text)
        if any(key in meta for key in ("pageType", "id", "sourceIds", "updatedAt")):
            wiki["openclaw_pages"] = wiki.get("openclaw_pages", 0) + 1
        if "<!-- openclaw:wiki:related:start -->" in text:
            wiki["openclaw_blocks"] = wiki.get("openclaw_blocks", 0) + 1
    else:
        wiki.setdefault("other", []).append(rel)


def _prompt(report: Report, agent, agent_report: AgentReport) -> None:
    rows: list[PromptFile] = []
    user_file = ""
    try:
        user_file = facts.user_path()
    except PathRefused:
        pass
    if user_file:
        chars, problem = _size_of(user_file)
        where = {
            facts.OWNER_USER_PATH: "",
            facts.ROOT_USER_PATH: "the root USER.md, OpenClaw's place for it",
        }.get(user_file, "named by MEMORY_USER_FILE")
        rows.append(PromptFile("USER.md", user_file, chars, context.USER_CAP, problem or where))
    chars, problem = _size_of(facts.INDEX_PATH)
    rows.append(PromptFile("INDEX.md", facts.INDEX_PATH, chars, context.INDEX_CAP, problem))
    memory_rel = agents.memory_file(agent)
    chars, problem = _size_of(memory_rel)
    name = agents.memory_file_name(agent)
    rows.append(
        PromptFile(
            name,
            memory_rel,
            chars,
            context.MEMORY_CAP,
            problem
            or ("memory.md stands for MEMORY.md, as in OpenClaw" if name != "MEMORY.md" else ""),
        )
    )
    agent_report.memory_file = memory_rel
    try:
        agent_report.system_before = len(context.system_prompt(agent, capped=False))
        agent_report.system_after = len(context.system_prompt(agent))
    except UnicodeDecodeError:
        report.problems.append(f"the system prompt of {agent.id} cannot be read: not UTF-8")
    except PathRefused as exc:
        report.problems.append(f"the system prompt of {agent.id} cannot be read: {exc.message}")
    notes_read = []
    for note in context.block_note_names(agent):
        rel = agent.path(f"memory/{note}")
        try:
            data = workspace.read_bytes_from(rel, 0)
        except PathRefused as exc:
            rows.append(PromptFile(f"memory/{note}", rel, None, context.note_cap(), exc.message))
            continue
        if data is not None:
            notes_read.append((note, data))
    for part in context.plan_new_block(notes_read):
        rows.append(
            PromptFile(
                f"memory/{part.name}",
                agent.path(f"memory/{part.name}"),
                part.chars,
                context.note_cap(),
                _block_state(part),
                in_block=True,
            )
        )
    agent_report.pre_turn_notes = len(notes_read)
    agent_report.pre_turn_before = len(context.render_new_block(notes_read, capped=False))
    agent_report.pre_turn_after = len(context.render_new_block(notes_read))
    agent_report.prompt = rows


def _block_state(part) -> str:
    """What the pre-turn block holds of one note, in words."""
    if part.shown >= part.chars:
        return "in the block, whole"
    if part.shown:
        return f"in the block, cut to {part.shown:,} chars; the rest named for memory_get"
    return "not shown: the block is full (named for memory_get)"


def _creates(report: Report, known: list) -> None:
    """Start-up makes only its own hidden machinery (ignored by git); memory files and
    folders come with the first write that needs them (SPEC §1)."""
    if not workspace.is_dir(workspace.LOCK_DIR):
        report.creates.append(f"{workspace.LOCK_DIR}/ (lock files, ignored by git)")
    if not workspace.is_dir(workspace.STATE_DIR):
        report.creates.append(f"{workspace.STATE_DIR}/ (derived state, ignored by git)")


def _holds_memory(folder: str) -> bool:
    """Whether an `agents/<id>` folder holds memory files: MEMORY.md, memory.md, or a
    Markdown file under its memory/ — a code folder has none of them."""
    names = {entry.path.rsplit("/", 1)[-1] for entry in _safe_survey(folder, False)}
    if names & {agents.MEMORY_FILE, agents.MEMORY_ALT_FILE}:
        return True
    return any(
        entry.kind == "file" and entry.path.endswith(".md")
        for entry in _safe_survey(f"{folder}/memory", True)
    )


def _agent_folders(report: Report, known_dirs: set[str]) -> None:
    """Offer an agent for each folder under agents/ that holds memory files and has none;
    count the folders that hold none (not offered)."""
    skipped = 0
    for entry in _safe_survey("agents", False):
        if entry.kind == "symlink":
            report.ignored.append(Ignored(entry.path, "a symbolic link: never followed"))
            continue
        if entry.kind != "dir" or entry.hidden or entry.path in known_dirs:
            continue
        if not _holds_memory(entry.path):
            skipped += 1
            continue
        agent_id = entry.path.split("/", 1)[1]
        if len(agent_id) > 64 or not AGENT_ID_VALIDATOR.regex.match(agent_id):
            report.ignored.append(
                Ignored(entry.path, "holds memory files, but its name cannot be an agent id")
            )
            continue
        report.agents.append(AgentReport(agent_id, entry.path, False))
    report.folders_without_memory = skipped


def diagnose() -> Report:
    """The doctor's report on MY_AGENT_HOME. Reads only; writes nothing anywhere."""
    report = Report(root=str(workspace.root()), layout="")
    if not workspace.is_dir():
        report.layout = "missing: MY_AGENT_HOME is not a folder"
        return report
    top = _safe_survey("", False)
    _layout(report, top)
    known = _known_agents(report)
    known_dirs = {agent.dir for agent in known}
    default_used = "" in known_dirs
    _root_files(report, top, default_used)
    for agent in known:
        agent_report = AgentReport(agent.id, agent.dir, True)
        _prompt(report, agent, agent_report)
        _classify_memory(report, agent_report, agent.path("memory"))
        if agent_report.wiki:
            for check in _VAULT_CHECKS:
                agent_report.wiki.update(check(agent))
        report.agents.append(agent_report)
    _agent_folders(report, known_dirs)
    _creates(report, known)
    report.search = _search_state()
    for extra in workspace.extra_roots():
        report.extra.append(
            {
                "path": extra.path,
                "shown_as": f"{workspace.EXTRA_PREFIX}/{extra.name}" if not extra.problem else "",
                "problem": extra.problem,
            }
        )
    return report


def _search_state() -> str:
    try:
        return status()["message"]
    except Exception as exc:  # noqa: BLE001 — the doctor reports, it never fails on this
        return f"unknown ({type(exc).__name__}: {exc})"


# --- the text ----------------------------------------------------------------------------


def _n(value: int | None) -> str:
    return "absent" if value is None else f"{value:,} chars"


def render(report: Report) -> str:
    """The report as the text memory_doctor prints."""
    lines = [f"Workspace: {report.root}", f"Layout: {report.layout}"]
    if report.signs:
        lines.append("  recognised by: " + "; ".join(report.signs))
    if report.database != "ok":
        lines.append(f"Database: {report.database}")
    for agent in report.agents:
        lines += ["", *_agent_lines(agent)]
    if report.folders_without_memory:
        lines += [
            "",
            f"agents/: {report.folders_without_memory:,} folder(s) without memory files "
            "(no MEMORY.md, memory.md or memory/*.md): not offered as agents",
        ]
    lines += ["", "Ignored, and why:"]
    lines += [f"  {item.path:<40} {item.why}" for item in report.ignored] or ["  nothing"]
    if report.extra:
        lines += ["", "Extra paths (MEMORY_EXTRA_PATHS, read-only):"]
        for extra in report.extra:
            state = f"shown as {extra['shown_as']}/" if extra["shown_as"] else extra["problem"]
            lines.append(f"  {extra['path']}: {state}")
    if report.search:
        lines += ["", f"Search index: {report.search}"]
    lines += ["", "Start-up (make run → memory_init) would create:"]
    lines += [f"  {item}" for item in report.creates] or ["  nothing"]
    if report.problems:
        lines += ["", "Problems:"] + [f"  {problem}" for problem in report.problems]
    lines += ["", "Nothing was changed."]
    return "\n".join(lines) + "\n"


def _row_line(row: PromptFile) -> str:
    state = _n(row.chars)
    if row.over and not row.in_block:
        state += f" — over the cap {row.cap:,}: cut with …"
    note = f" ({row.note})" if row.note else ""
    if row.in_block:  # a note: its path says what it is
        return f"    {row.path:<40} {state}{note}"
    return f"    {row.label:<24} {row.path:<34} {state}{note}"


def _agent_lines(agent: AgentReport) -> list[str]:
    """One agent's part of the report: what its prompt reads, its notes, other files and
    wiki vault; or, for a folder without an agent, how to make one."""
    if not agent.known:
        return [
            f"Agent folder {agent.dir}/ holds memory files but no agent yet — create the "
            f"agent {agent.id!r} (POST /api/agents or the admin) to use it"
        ]
    lines = [
        f"Agent {agent.id} ({agent.dir or 'the home itself'})",
        "  System prompt (caps: USER.md/INDEX.md 4,000, MEMORY.md 24,000):",
    ]
    for row in agent.prompt:
        if not row.in_block:
            lines.append(_row_line(row))
    lines.append(
        f"  Pre-turn block, before a new conversation's first message (every note of today "
        f"and yesterday, newest first; {context.note_cap():,} chars a note, "
        f"{context.total_cap():,} in all):"
    )
    block = [_row_line(row) for row in agent.prompt if row.in_block]
    lines += block or ["    nothing: no note of today or yesterday"]
    lines.append(
        f"  Context before → after the caps: system prompt {agent.system_before:,} → "
        f"{agent.system_after:,} chars; pre-turn block {agent.pre_turn_before:,} → "
        f"{agent.pre_turn_after:,} chars"
    )
    lines.append(
        f"  Notes: {agent.notes} of {agent.note_days} day(s), "
        f"{agent.transcripts} session transcript(s)"
    )
    if agent.odd_notes:
        lines.append("    odd names, read as notes of their day: " + ", ".join(agent.odd_notes))
    if agent.other_files:
        shown = ", ".join(agent.other_files[:8])
        more = f" and {len(agent.other_files) - 8} more" if len(agent.other_files) > 8 else ""
        lines.append(f"  Other memory files ({len(agent.other_files)}): {shown}{more}")
    return lines + _wiki_lines(agent.wiki)


def _wiki_lines(wiki: dict) -> list[str]:
    if not wiki:
        return []
    pages = wiki.get("pages", {})
    counts = ", ".join(f"{folder} {count}" for folder, count in sorted(pages.items()))
    lines = [f"  Wiki vault: {sum(pages.values())} page(s) ({counts or 'none'})"]
    if wiki.get("openclaw_pages"):
        lines.append(
            f"    {wiki['openclaw_pages']} OpenClaw memory-wiki page(s), "
            f"{wiki.get('openclaw_blocks', 0)} with OpenClaw's Related block: "
            "read as they are, their blocks left alone"
        )
    for keys in wiki.get("same_named", []):
        lines.append(
            "    one name, two pages (told apart by their folders; link one as "
            f"[[{keys[0]}]]): " + ", ".join(keys)
        )
    ambiguous = wiki.get("ambiguous_links", [])
    if ambiguous:
        lines.append(
            f"    {len(ambiguous)} bare link(s) that match several pages (each opens the first; "
            "lint reports them as ambiguous):"
        )
        lines += [
            f"      {row['page']}: [[{row['link']}]] matches {', '.join(row['matches'])}"
            for row in ambiguous[:10]
        ]
        if len(ambiguous) > 10:
            lines.append(f"      … and {len(ambiguous) - 10} more")
    if wiki.get("other"):
        lines.append("    not pages, left as they are: " + ", ".join(wiki["other"]))
    return lines
