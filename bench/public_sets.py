"""Public labelled sets for bench/recall.py: where each comes from, how it becomes a
workspace of notes shaped like the product's, and where the converted copy is kept.

Nobody tuned the search to these sets. Every gold label is the set's own annotation
(LoCoMo's evidence turns; XQuAD's answer spans); the converters only decide where a turn
or a sentence lands in the notes, and record that line.

- `locomo`: LoCoMo, github:snap-research/locomo, `data/locomo10.zip` at commit
  e76cdff4a04fce19090596d49862fe87a5c15aaa (10 conversations of 19–32 sessions, 1,986
  questions in five categories, each with its evidence turns). Licence: the repository
  has no licence file; the first author's copy of the data on Hugging Face
  (adymaharana/locomo) declares CC BY-NC 4.0.
- `xquad-vi`: XQuAD's Vietnamese file, github:google-deepmind/xquad, `xquad.vi.json` at
  commit 7d30520c717524000f0d9d2f9c10a069acd9d285 (240 Wikipedia paragraphs of 48
  articles, 1,190 questions, each with its answer span). Licence: CC BY-SA 4.0
  (`CC-BY-SA4.0.txt` in the repository).

Neither file is committed: LoCoMo has no licence of its own in its repository (and the
one its author declares elsewhere is non-commercial), and this workplace keeps data that
was fetched from public repositories out of the developers' commits. XQuAD's licence would
allow a copy; it stays out for the same workplace rule, and at 0.9 MB it is quick to place.

**Where the raw files are looked for** (the first that exists):

1. the path given on the command line (`bench/recall.py --locomo PATH --xquad-vi PATH`);
2. the environment: `MEMORY_BENCH_LOCOMO`, `MEMORY_BENCH_XQUAD_VI` (a file);
3. `<data>/raw/<file>`, where `<data>` is `MEMORY_BENCH_DATA`, else
   `~/.cache/agent-memory/bench` (outside every checkout: one copy serves every worktree).

A set whose raw file is absent is skipped with a message saying how to place it; nothing
fails. `python bench/public_sets.py place NAME FROM` copies the raw file into `<data>/raw/`,
FROM being the file itself or a bare git directory of the source repository (the file is
read at the pinned commit), and checks its SHA-256 against the one recorded below.

**The converted set** is cached in `<data>/converted/<name>-<sha256 prefix>-v<CONVERTER>/`:
`agents/<agent>/memory/*.md` (laid out as in a home: copy `agents/` into one and create
the agents) and `set.json` (the questions, the files' mtimes, what was left out and why).
It is rebuilt when the raw file or the converter changes.

Run `python bench/public_sets.py status` to see what is placed, `convert [NAME]` to convert.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import unicodedata
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

CONVERTER = 3  # bump when a converter's output changes: the cache is keyed by it


@dataclass(frozen=True)
class Source:
    """Where a set's raw file comes from, and how to find it here."""

    name: str
    title: str
    repository: str
    path: str
    commit: str
    licence: str
    sha256: str
    env: str
    file_name: str


SOURCES: dict[str, Source] = {
    source.name: source
    for source in (
        Source(
            name="locomo",
            title="LoCoMo (very long-term conversational memory), 10 conversations",
            repository="snap-research/locomo",
            path="data/locomo10.zip",
            commit="e76cdff4a04fce19090596d49862fe87a5c15aaa",
            licence=(
                "no licence file in the repository; the first author's Hugging Face copy "
                "(adymaharana/locomo) declares CC BY-NC 4.0"
            ),
            sha256="5c342973da4b45c12583c9fc7594d6410880f5aba2c491a0db09db262c906fb5",
            env="MEMORY_BENCH_LOCOMO",
            file_name="locomo10.zip",
        ),
        Source(
            name="xquad-vi",
            title="XQuAD, Vietnamese (SQuAD v1.1 dev subset, professionally translated)",
            repository="google-deepmind/xquad",
            path="xquad.vi.json",
            commit="7d30520c717524000f0d9d2f9c10a069acd9d285",
            licence="CC BY-SA 4.0 (CC-BY-SA4.0.txt in the repository)",
            sha256="f619a1eb11fb42d3ab0834259e488a65f585447ef6154437bfb7199d85161a04",
            env="MEMORY_BENCH_XQUAD_VI",
            file_name="xquad.vi.json",
        ),
    )
}


@dataclass
class Question:
    """One labelled question: asked of one agent (`scope`), answered by `answers`, the
    (agent-relative path, 1-based line) pairs the set's annotation points at."""

    ident: str
    kind: str
    text: str
    scope: str
    answers: list[tuple[str, int]]


@dataclass
class LabelledSet:
    """A converted set: `files[agent][path]` is a note's text (path relative to the agent
    dir), `mtimes[agent][path]` its modification time (epoch seconds)."""

    name: str
    title: str
    kinds: list[str]
    files: dict[str, dict[str, str]]
    mtimes: dict[str, dict[str, float]]
    questions: list[Question]
    left_out: dict[str, int] = field(default_factory=dict)  # why → how many questions
    sha256: str = ""

    def line(self, scope: str, path: str, number: int) -> str:
        """The text of one line (1-based) of a note."""
        lines = self.files[scope][path].split("\n")
        return lines[number - 1] if 0 < number <= len(lines) else ""


class Absent(Exception):
    """The raw file of a set is not on this machine; the message says how to place it."""


# --- where things are --------------------------------------------------------------


def data_dir() -> Path:
    """The directory holding raw/ and converted/: MEMORY_BENCH_DATA, else the user cache."""
    configured = os.environ.get("MEMORY_BENCH_DATA")
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "agent-memory" / "bench"


def raw_path(name: str, given: str | Path | None = None) -> Path:
    """The raw file of set `name`: `given`, else its environment variable, else
    `<data>/raw/<file>`. Raises Absent (with how to place it) when none exists."""
    source = SOURCES[name]
    candidates = [("given", given), (source.env, os.environ.get(source.env))]
    for label, value in candidates:
        if value:
            path = Path(value).expanduser()
            if path.is_file():
                return path
            raise Absent(f"{name}: {label} names {path}, which is not a file.")
    default = data_dir() / "raw" / source.file_name
    if default.is_file():
        return default
    raise Absent(
        f"{name}: no raw file ({default} is absent; {source.env} is not set). "
        f"Fetch github:{source.repository} and run `python bench/public_sets.py place {name} "
        f"<its git dir or {source.path}>`, or point {source.env} at {source.file_name} "
        f"(commit {source.commit[:12]})."
    )


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def place(name: str, origin: Path) -> Path:
    """Copy set `name`'s raw file into `<data>/raw/`: from the file itself, or from a bare
    git directory of its repository at the pinned commit. Returns where it went."""
    source = SOURCES[name]
    target = data_dir() / "raw" / source.file_name
    target.parent.mkdir(parents=True, exist_ok=True)
    if origin.is_dir():
        blob = subprocess.run(
            ["git", f"--git-dir={origin}", "show", f"{source.commit}:{source.path}"],
            capture_output=True,
            check=True,
        ).stdout
        target.write_bytes(blob)
    else:
        shutil.copyfile(origin, target)
    found = sha256_of(target)
    if found != source.sha256:
        print(
            f"warning: {target} has SHA-256 {found}, not the {source.sha256} of commit "
            f"{source.commit[:12]}: figures from it are not comparable with recorded ones",
            file=sys.stderr,
        )
    return target


# --- shared text helpers -----------------------------------------------------------


def one_line(text: str) -> str:
    """Whitespace (newlines too) collapsed to single spaces."""
    return " ".join(text.split())


def strip_marks(text: str) -> str:
    """The text as typed without Vietnamese marks: combining marks dropped, đ/Đ → d/D;
    case and everything else kept (`Đội thủ` → `Doi thu`)."""
    decomposed = unicodedata.normalize("NFD", text)
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return unicodedata.normalize("NFC", bare.replace("đ", "d").replace("Đ", "D"))


# --- LoCoMo ------------------------------------------------------------------------

# The numbers of LoCoMo's `category` field, named as its evaluation code treats them
# (task_eval/evaluation.py: 1 is scored per sub-answer, 2 is asked with the conversation's
# date, 5 expects "not mentioned"; evaluation_stats.py prints them in the paper's order
# 4, 1, 2, 3, 5) and as the maintainers' issue tracker confirms (snap-research/locomo#29).
LOCOMO_KINDS = {
    4: "single-hop",
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    5: "adversarial",
}
_MONTHS = {
    name: number
    for number, name in enumerate(
        "January February March April May June July August September October November "
        "December".split(),
        start=1,
    )
}
_LOCOMO_WHEN = re.compile(r"(\d{1,2}):(\d{2}) ([ap]m) on (\d{1,2}) ([A-Za-z]+),? (\d{4})")
_SESSION = re.compile(r"session_(\d+)")


def _locomo_when(text: str) -> dt.datetime:
    """`1:56 pm on 8 May, 2023` → 2023-05-08 13:56."""
    match = _LOCOMO_WHEN.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"unexpected LoCoMo session time {text!r}")
    hour, minute, half, day, month, year = match.groups()
    hour_24 = int(hour) % 12 + (12 if half == "pm" else 0)
    return dt.datetime(int(year), _MONTHS[month], int(day), hour_24, int(minute))


def _locomo_samples(raw: Path) -> list[tuple[str, dict, list[dict]]]:
    """(sample id, conversation, qa) for each conversation, from the zip of one JSON file
    per conversation (the pinned commit) or from a locomo10.json list of samples."""
    if zipfile.is_zipfile(raw):
        samples = []
        with zipfile.ZipFile(raw) as archive:
            for member in sorted(archive.namelist()):
                if not member.endswith(".json"):
                    continue
                sample = json.load(io.TextIOWrapper(archive.open(member), encoding="utf-8"))
                samples.append((Path(member).stem, sample, sample["qa"]))
        return samples
    data = json.loads(raw.read_text(encoding="utf-8"))
    return [
        (str(item["sample_id"]).removeprefix("conv-"), item["conversation"], item["qa"])
        for item in data
    ]


def _evidence_ids(evidence: list[str]) -> list[str]:
    """The dialog ids of an evidence list, read as the annotators wrote them: several ids
    in one string are split (`D8:6; D9:17`), `D:11:26` is D11:26 and `D30:05` is D30:5."""
    ids = []
    for item in evidence:
        for part in re.split(r"[;,\s]+", item.strip()):
            match = re.fullmatch(r"D:?(\d+):0*(\d+)", part)
            ids.append(f"D{match.group(1)}:{match.group(2)}" if match else part)
    return [part for part in ids if part]


def convert_locomo(raw: Path) -> LabelledSet:
    """LoCoMo as an agent per conversation (`locomo-<sample>`), each with a daily note per
    session day, `memory/YYYY-MM-DD.md`, as memory_save writes one: `# YYYY-MM-DD`, a
    blank line, then a line per turn, `- HH:MM Speaker: text`, HH:MM the session's start
    (turns carry no time of their own). A turn that shared an image ends with
    ` [shares <caption>]`, the caption the set ships, as the set's own evaluation code
    writes it. A question's answers are the lines of its evidence turns; questions
    without evidence, or naming a turn that does not exist, are left out (counted)."""
    files: dict[str, dict[str, str]] = {}
    mtimes: dict[str, dict[str, float]] = {}
    questions: list[Question] = []
    left_out: dict[str, int] = {}
    for sample, conversation, qa in _locomo_samples(raw):
        scope = f"locomo-{sample}"
        notes: dict[str, list[str]] = {}
        stamps: dict[str, float] = {}
        where: dict[str, tuple[str, int]] = {}
        numbers = sorted(
            int(match.group(1))
            for key in conversation
            if (match := _SESSION.fullmatch(key)) and conversation[key]
        )
        for number in numbers:
            when = _locomo_when(conversation[f"session_{number}_date_time"])
            path = f"memory/{when.date().isoformat()}.md"
            lines = notes.setdefault(path, [f"# {when.date().isoformat()}", ""])
            for turn in conversation[f"session_{number}"]:
                text = one_line(turn.get("text", ""))
                caption = one_line(turn.get("blip_caption") or "")
                if caption:
                    text = f"{text} [shares {caption}]".strip()
                lines.append(f"- {when:%H:%M} {turn['speaker']}: {text}")
                where[turn["dia_id"]] = (path, len(lines))
            stamps[path] = when.replace(tzinfo=dt.UTC).timestamp()
        files[scope] = {path: "\n".join(lines) + "\n" for path, lines in notes.items()}
        mtimes[scope] = stamps
        for index, item in enumerate(qa):
            ids = _evidence_ids(item.get("evidence") or [])
            if not ids:
                left_out["no evidence"] = left_out.get("no evidence", 0) + 1
                continue
            if any(turn not in where for turn in ids):
                left_out["evidence names no turn"] = left_out.get("evidence names no turn", 0) + 1
                continue
            questions.append(
                Question(
                    ident=f"{sample}#{index}",
                    kind=LOCOMO_KINDS[int(item["category"])],
                    text=str(item["question"]),
                    scope=scope,
                    answers=sorted({where[turn] for turn in ids}),
                )
            )
    return LabelledSet(
        name="locomo",
        title=SOURCES["locomo"].title,
        kinds=list(LOCOMO_KINDS.values()),
        files=files,
        mtimes=mtimes,
        questions=questions,
        left_out=left_out,
    )


# --- XQuAD (Vietnamese) ------------------------------------------------------------

XQUAD_PARAGRAPHS = "xquad-vi-paragraphs"
XQUAD_SENTENCES = "xquad-vi-sentences"
XQUAD_KINDS = ["paragraph", "paragraph, no marks", "sentence", "sentence, no marks"]
_SENTENCE_END = re.compile(r"[.!?…]+[\"”’»)\]]*\s+")
_OPENERS = '"“‘«([-–'


_ABBREVIATIONS = {"St", "Dr", "Mr", "Mrs", "Ms", "Jr", "Sr", "Co", "Inc", "Ltd", "vs"}


def _abbreviation(word: str) -> bool:
    """An initial (`J`), a short upper-case abbreviation (`TP`) or a listed one (`St`)."""
    return len(word) == 1 or (word.isupper() and len(word) <= 3) or word in _ABBREVIATIONS


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) character spans of the sentences of a paragraph: a sentence ends at
    `.`, `!`, `?` or `…` (closing quotes or brackets kept with it) followed by space and an
    upper-case letter or a digit, unless the word before the stop is an initial or an
    abbreviation (`J.`, `TP.`, `St.`). The spans cover the text: nothing is dropped."""
    spans = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        after = text[match.end() :].lstrip(_OPENERS)
        if not after or not (after[0].isupper() or after[0].isdigit()):
            continue
        word = re.search(r"(\w+)[.!?…]+[\"”’»)\]]*\s+\Z", text[start : match.end()])
        if word and text[match.start()] == "." and _abbreviation(word.group(1)):
            continue
        spans.append((start, match.end()))
        start = match.end()
    if start < len(text):
        spans.append((start, len(text)))
    return [(a, b) for a, b in spans if text[a:b].strip()]


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


# The translated file's answer_start does not always point at the occurrence that answers
# (`2` of "Josh Norman … 2 lần đoạt bóng" points at an earlier "2 lần"): where the answer's
# text occurs more than once in its paragraph, its sentence is not known.
_REPEATED = "sentence level only: answer text occurs more than once in its paragraph"


def convert_xquad_vi(raw: Path) -> LabelledSet:
    """XQuAD's Vietnamese file as two agents holding the same 48 articles, a note each,
    `memory/<article>.md` opening with `# <article title>`:

    - `xquad-vi-paragraphs`: each paragraph one line (one entry), paragraphs apart by a
      blank line; a question's answer is its paragraph's line;
    - `xquad-vi-sentences`: each sentence a list item `- …` (one entry), a blank line
      between paragraphs; a question's answer is the line(s) of the sentence(s) its
      annotated answer span (answer_start, text) falls in. Questions whose answer text
      occurs more than once in the paragraph are asked at paragraph level only (counted).

    Each question is asked twice per level: as written, and with its marks stripped
    (`strip_marks`), as a person types on a keyboard without Vietnamese input."""
    data = json.loads(raw.read_text(encoding="utf-8"))["data"]
    files: dict[str, dict[str, str]] = {XQUAD_PARAGRAPHS: {}, XQUAD_SENTENCES: {}}
    questions: list[Question] = []
    left_out: dict[str, int] = {}
    for article in data:
        title = article["title"].replace("_", " ")
        path = f"memory/{_slug(article['title'])}.md"
        paragraph_lines = [f"# {title}", ""]
        sentence_lines = [f"# {title}", ""]
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            paragraph_lines.append(one_line(context))
            paragraph_line = len(paragraph_lines)
            paragraph_lines.append("")
            sentence_line: list[tuple[int, int, int]] = []  # (start, end, line)
            for start, end in sentence_spans(context):
                sentence_lines.append(f"- {one_line(context[start:end])}")
                sentence_line.append((start, end, len(sentence_lines)))
            sentence_lines.append("")
            for qa in paragraph["qas"]:
                answer = qa["answers"][0]
                begin = int(answer["answer_start"])
                finish = begin + len(answer["text"])
                if context[begin:finish] != answer["text"]:
                    left_out["answer span does not match"] = (
                        left_out.get("answer span does not match", 0) + 1
                    )
                    continue
                levels = [(XQUAD_PARAGRAPHS, "paragraph", [(path, paragraph_line)])]
                if context.count(answer["text"]) == 1:
                    lines = [line for a, b, line in sentence_line if a < finish and b > begin]
                    levels.append((XQUAD_SENTENCES, "sentence", [(path, n) for n in lines]))
                else:
                    left_out[_REPEATED] = left_out.get(_REPEATED, 0) + 1
                for scope, level, answers in levels:
                    for marks, text in (("", qa["question"]), (", no marks", None)):
                        questions.append(
                            Question(
                                ident=f"{qa['id']}/{level}{marks.replace(', ', '/')}",
                                kind=f"{level}{marks}",
                                text=text if text is not None else strip_marks(qa["question"]),
                                scope=scope,
                                answers=answers,
                            )
                        )
        files[XQUAD_PARAGRAPHS][path] = "\n".join(paragraph_lines).rstrip("\n") + "\n"
        files[XQUAD_SENTENCES][path] = "\n".join(sentence_lines).rstrip("\n") + "\n"
    # The notes carry no date: one fixed time for all (ties then fall to the path).
    stamp = dt.datetime(2024, 1, 1, tzinfo=dt.UTC).timestamp()
    mtimes = {scope: dict.fromkeys(paths, stamp) for scope, paths in files.items()}
    return LabelledSet(
        name="xquad-vi",
        title=SOURCES["xquad-vi"].title,
        kinds=XQUAD_KINDS,
        files=files,
        mtimes=mtimes,
        questions=questions,
        left_out=left_out,
    )


CONVERTERS = {"locomo": convert_locomo, "xquad-vi": convert_xquad_vi}


# --- the cache ---------------------------------------------------------------------


def _cache_dir(name: str, sha256: str) -> Path:
    return data_dir() / "converted" / f"{name}-{sha256[:12]}-v{CONVERTER}"


def _write_cache(target: Path, labelled: LabelledSet) -> None:
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    for scope, paths in labelled.files.items():
        for rel, text in paths.items():
            path = partial / "agents" / scope / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            stamp = labelled.mtimes[scope][rel]
            os.utime(path, (stamp, stamp))
    meta = asdict(labelled)
    del meta["files"]
    (partial / "set.json").write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)


def _read_cache(target: Path) -> LabelledSet:
    meta = json.loads((target / "set.json").read_text(encoding="utf-8"))
    files = {
        scope: {rel: (target / "agents" / scope / rel).read_text(encoding="utf-8") for rel in paths}
        for scope, paths in meta["mtimes"].items()
    }
    questions = [
        Question(**{**item, "answers": [tuple(pair) for pair in item["answers"]]})
        for item in meta.pop("questions")
    ]
    return LabelledSet(**meta, files=files, questions=questions)


def load(name: str, given: str | Path | None = None) -> LabelledSet:
    """Set `name`, converted from its raw file (see raw_path) or read from the cache.
    Raises Absent when the raw file is not on this machine."""
    raw = raw_path(name, given)
    sha256 = sha256_of(raw)
    target = _cache_dir(name, sha256)
    if (target / "set.json").is_file():
        return _read_cache(target)
    labelled = CONVERTERS[name](raw)
    labelled.sha256 = sha256
    if sha256 != SOURCES[name].sha256:
        print(
            f"warning: {raw} is not the file of commit {SOURCES[name].commit[:12]} "
            f"(SHA-256 {sha256[:12]}…): figures are not comparable with recorded ones",
            file=sys.stderr,
        )
    _write_cache(target, labelled)
    return labelled


def describe(labelled: LabelledSet) -> str:
    """One line: what the converted set holds."""
    notes = sum(len(paths) for paths in labelled.files.values())
    chars = sum(len(text) for paths in labelled.files.values() for text in paths.values())
    lines = sum(text.count("\n") for paths in labelled.files.values() for text in paths.values())
    left = ", ".join(f"{count} {why}" for why, count in labelled.left_out.items())
    return (
        f"{labelled.name}: {len(labelled.files)} agents, {notes} notes, {lines:,} lines, "
        f"{chars / 1e6:.2f} M characters; {len(labelled.questions)} questions"
        + (f" (left out: {left})" if left else "")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("status", help="where each set's raw file is looked for, and if found")
    placing = commands.add_parser("place", help="copy a raw file into <data>/raw/")
    placing.add_argument("name", choices=sorted(SOURCES))
    placing.add_argument("origin", type=Path, help="the file, or a bare git dir of the repo")
    converting = commands.add_parser("convert", help="convert (and cache) the placed sets")
    converting.add_argument("names", nargs="*", help=f"of {', '.join(sorted(SOURCES))}")
    args = parser.parse_args()
    unknown = set(getattr(args, "names", [])) - set(SOURCES)
    if unknown:
        parser.error(f"no set named {', '.join(sorted(unknown))}")
    if args.command == "place":
        print(f"placed {place(args.name, args.origin)}")
        return
    for name in args.names if args.command == "convert" and args.names else sorted(SOURCES):
        source = SOURCES[name]
        print(f"{name}: {source.title}")
        print(f"  from github:{source.repository} {source.path} @ {source.commit}")
        print(f"  licence: {source.licence}")
        try:
            raw = raw_path(name)
        except Absent as absent:
            print(f"  absent: {absent}")
            continue
        print(f"  raw: {raw}")
        if args.command == "convert":
            print(f"  {describe(load(name))}")
            print(f"  cached in {_cache_dir(name, sha256_of(raw))}")


if __name__ == "__main__":
    main()
