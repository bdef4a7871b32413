"""memory_search (SPEC §6.1): folding, the word rules, entries, ranking, limits and a cache
that is never stale. Files are written by hand on purpose: search must see whatever a person
(or another process) put on disk."""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
import threading
import time
import unicodedata
from pathlib import Path

import pytest

from memory import facts, search, text
from memory import workspace as files
from memory.errors import InvalidInput

OLD = 1_600_000_000  # 2020-09-13, a fixed mtime far from "now"


def put(home: Path, rel: str, body: str, *, mtime: int | None = None) -> Path:
    """Write a file by hand, optionally with a given mtime (seconds)."""
    path = home / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def found(query: str, agent, **options) -> list[str]:
    return [search.format_hit(hit) for hit in search.search(query, agent=agent, **options)]


# --- folding -----------------------------------------------------------------------------


def test_it_finds_sach_dang_doc_typed_without_marks(master, workspace):
    put(workspace, "memory/2026-01-05.md", "# 2026-01-05\n\n- 10:00 Sách đang đọc: Nhà giả kim\n")

    assert found("sach dang doc", master) == [
        "[memory/2026-01-05.md:3] (2026-01-05 Mon) - 10:00 Sách đang đọc: Nhà giả kim"
    ]


@pytest.mark.parametrize(
    ("query", "line"),
    [
        ("nguyen", "Gặp anh Nguyễn ở quán"),
        ("benh vien", "Đưa mẹ đi bệnh viện Chợ Rẫy"),
        ("ho chi minh", "Bay vào Hồ Chí Minh chiều nay"),
        ("pho", "Ăn phở bò"),
        ("duc", "Chuyến đi Đức tháng sau"),
        ("ĐỨC", "Chuyến đi Đức tháng sau"),
        ("phở", "pho with friends"),
    ],
)
def test_it_folds_marks_d_and_case_on_both_sides(master, workspace, query, line):
    put(workspace, "MEMORY.md", f"# Memory\n\n- {line}\n- something else entirely\n")

    assert found(query, master) == [f"[MEMORY.md:3] (# Memory) - {line}"]


def test_fold_drops_every_combining_mark_and_keeps_the_lines():
    assert text.fold("Sách ĐANG đọc\nHồ Chí Minh") == "sach dang doc\nho chi minh"
    assert text.fold("Ê\u0301\u0323 Ｄ ǅ 東京") == "e ｄ ǆ 東京"


def spec_fold(value: str) -> str:
    """SPEC §6.1 word for word: NFD, drop combining marks, đ→d and Đ→D, casefold."""
    decomposed = unicodedata.normalize("NFD", value)
    kept = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return kept.replace("đ", "d").replace("Đ", "D").casefold()


def test_fold_is_the_spec_rule_for_every_character():
    every = [chr(code) for code in range(0x110000) if not 0xD800 <= code < 0xE000]

    assert text.fold("".join(every)) == spec_fold("".join(every))
    assert [text.fold(ch) for ch in every[:0x3000]] == [spec_fold(ch) for ch in every[:0x3000]]
    assert text.words("Sách, đang-đọc!! sách") == ["sach", "dang", "doc"]


# --- the word rules ----------------------------------------------------------------------


def test_it_matches_a_short_word_only_whole(master, workspace):
    put(
        workspace,
        "memory/2026-01-05.md",
        "- cho con đi học\n- ông bà ở quê\n- đi ô tô về\n- chọn o đầu tiên\n",
    )

    assert found("o", master) == [
        "[memory/2026-01-05.md:2] (2026-01-05 Mon) - ông bà ở quê",  # ở folds to a whole `o`
        "[memory/2026-01-05.md:3] (2026-01-05 Mon) - đi ô tô về",
        "[memory/2026-01-05.md:4] (2026-01-05 Mon) - chọn o đầu tiên",
    ]


def test_it_matches_doc_as_a_word_but_docs_anywhere(master, workspace):
    put(
        workspace,
        "memory/2026-01-05.md",
        "- đọc sách\n- the doc is ready\n- read the docs\n- fix the docstring\n- a_doc_file\n",
    )

    assert sorted(found("doc", master)) == [
        "[memory/2026-01-05.md:1] (2026-01-05 Mon) - đọc sách",
        "[memory/2026-01-05.md:2] (2026-01-05 Mon) - the doc is ready",
        # `_` is not a letter: doc stands alone
        "[memory/2026-01-05.md:5] (2026-01-05 Mon) - a_doc_file",
    ]
    assert found("docs", master) == [
        "[memory/2026-01-05.md:3] (2026-01-05 Mon) - read the docs",
        "[memory/2026-01-05.md:4] (2026-01-05 Mon) - fix the docstring",
    ]


def test_it_refuses_a_query_without_letters_or_digits(master, workspace):
    with pytest.raises(InvalidInput):
        search.search("  ?!… ", agent=master)


# --- entries and the all-words rule ------------------------------------------------------


def test_entries_with_every_word_come_first_and_the_others_after(master, workspace):
    put(
        workspace,
        "memory/2026-01-05.md",
        "- sách hay tuần này\n- cuốn sách mới\n- phim hay quá\n- sách hay khác nữa\n",
    )

    # An entry missing a word is ranked lower, never dropped (SPEC §6.1).
    assert found("sach hay", master) == [
        "[memory/2026-01-05.md:1] (2026-01-05 Mon) - sách hay tuần này",
        "[memory/2026-01-05.md:4] (2026-01-05 Mon) - sách hay khác nữa",
        "[memory/2026-01-05.md:2] (2026-01-05 Mon) - cuốn sách mới",
        "[memory/2026-01-05.md:3] (2026-01-05 Mon) - phim hay quá",
    ]


def test_partial_matches_rank_by_rarity_and_length_when_none_has_every_word(master, workspace):
    put(workspace, "memory/2026-01-05.md", "- eco only\n- retreat and deadline\n", mtime=OLD)
    put(workspace, "memory/2026-01-06.md", "- deadline alone\n", mtime=OLD + 86400)

    hits = search.search("eco retreat deadline", agent=master)

    # eco and retreat stand in one entry each (idf ln(1 + 2.5/1.5) = 0.981), deadline in
    # two (ln(1 + 1.5/2.5) = 0.470): rarer words weigh more. BM25 (k1 1.2, b 0.5) sets
    # each against the entry's length, 3 and 2 words where the mean is 7/3:
    # 1.451 × 2.2 / (1 + 1.2 × (0.5 + 0.5 × 9/7)), 0.981 × 2.2 / (1 + 1.2 × (0.5 + 0.5 × 6/7)).
    assert [(search.format_hit(hit), hit.score, hit.weight) for hit in hits] == [
        ("[memory/2026-01-05.md:2] (2026-01-05 Mon) - retreat and deadline", 2, 1.346),
        ("[memory/2026-01-05.md:1] (2026-01-05 Mon) - eco only", 1, 1.021),
        ("[memory/2026-01-06.md:1] (2026-01-06 Tue) - deadline alone", 1, 0.489),
    ]
    assert hits[0].matched == ["retreat", "deadline"]


def test_it_searches_every_markdown_file_of_the_agent_and_nothing_else(master, workspace):
    put(workspace, "MEMORY.md", "- kiwi in memory\n")
    put(workspace, "memory/2026-01-05-1030.md", "- kiwi in a suffixed note\n")
    put(workspace, "memory/facebook-books.md", "- kiwi in a hand-kept file\n")
    put(workspace, "memory/wiki/entities/kiwi.md", "# Kiwi\n\nkiwi on a wiki page\n")
    put(workspace, "memory/notes.txt", "kiwi in a text file\n")
    put(workspace, "memory/.hidden.md", "kiwi hidden\n")
    put(workspace, "users/owner/USER.md", "kiwi in USER.md\n")
    put(workspace, "agents/helper/memory/2026-01-05.md", "- kiwi of another agent\n")
    put(workspace, "AGENTS.md", "kiwi persona\n")

    assert sorted(hit.path for hit in search.search("kiwi", agent=master)) == [
        "MEMORY.md",
        "memory/2026-01-05-1030.md",
        "memory/facebook-books.md",
        "memory/wiki/entities/kiwi.md",
        "memory/wiki/entities/kiwi.md",
    ]


def test_it_shows_paths_relative_to_another_agents_dir(helper_agent, workspace):
    put(workspace, "agents/helper/memory/2026-01-05.md", "- mango for helper\n")
    put(workspace, "memory/2026-01-05.md", "- mango for master\n")

    assert found("mango", helper_agent) == [
        "[memory/2026-01-05.md:1] (2026-01-05 Mon) - mango for helper"
    ]
    assert search.search("mango", agent=helper_agent)[0].scope == "agent:helper"


def test_it_does_not_search_the_wiki_machine_block(master, workspace):
    page = "\n".join(
        [
            "---",
            "title: Eco retreat",
            "kind: entity",
            "---",
            "",
            "Deadline for Eco retreat is Friday.",
            "",
            text.MACHINE_BLOCK_START,
            "Links out: [[Zanzibar trip]]",
            "Linked from: [[Friday plans]]",
            text.MACHINE_BLOCK_END,
            "Zanzibar is written here by a person.",
            "",
        ]
    )
    put(workspace, "memory/wiki/entities/eco-retreat.md", page)

    # The page's title is the heading of what stands under no heading (SPEC §6.1).
    assert found("zanzibar", master) == [
        "[memory/wiki/entities/eco-retreat.md:12] (Eco retreat) Zanzibar is written here by a "
        "person."
    ]
    assert [hit.line for hit in search.search("friday", agent=master)] == [6]


# --- facts -------------------------------------------------------------------------------


def test_a_fact_is_one_entry_matched_on_description_and_body_together(master, workspace):
    facts.save_fact(
        "favourite-dish",
        description="Món ăn yêu thích",
        type="preference",
        body="Phở bò tái,\nkhông hành.",
        written_by="owner",
        source="chat",
    )
    put(workspace, "memory/2026-01-05.md", "- phở với bạn\n", mtime=OLD)

    hits = search.search("mon pho", agent=master)

    # The fact holds both words, the note only one: it comes first, the note after.
    assert [search.format_hit(hit) for hit in hits] == [
        "[users/owner/facts/favourite-dish.md] Món ăn yêu thích — Phở bò tái, không hành.",
        "[memory/2026-01-05.md:1] (2026-01-05 Mon) - phở với bạn",
    ]
    assert (hits[0].scope, hits[0].agent, hits[0].line, hits[0].score) == ("user", None, None, 2)


def test_it_does_not_search_the_fact_index_or_frontmatter(master, workspace):
    facts.save_fact(
        "city",
        description="Where the owner lives",
        type="profile",
        body="Đà Nẵng",
        written_by="owner",
        source="telegram",
    )

    assert found("telegram", master) == []
    assert found("lives", master) == ["[users/owner/facts/city.md] Where the owner lives — Đà Nẵng"]


def test_it_leaves_the_user_scope_out_when_asked(master, workspace):
    facts.save_fact(
        "city",
        description="Home town",
        type="profile",
        body="Huế",
        written_by="owner",
        source="chat",
    )

    assert search.search("hue", agent=master, include_user=False) == []
    assert len(search.search("hue", agent=None)) == 1


# --- ranking -----------------------------------------------------------------------------


def test_it_ranks_a_dated_note_by_its_day_then_path_descending_then_line_order(master, workspace):
    # mtimes in the opposite order (a clone or a bulk import sets them all anew): the
    # day in the name decides, then the path (a suffixed note of the same day after the
    # plain one), then the line.
    # Lines of one length, so they score the same and only the ties decide.
    put(workspace, "memory/2026-01-01.md", "- tennis old\n", mtime=OLD + 900)
    put(workspace, "memory/2026-01-02.md", "- tennis a\n- tennis b\n", mtime=OLD)
    put(workspace, "memory/2026-01-02-1030.md", "- tennis session\n", mtime=OLD)
    put(workspace, "memory/2026-01-03.md", "- tennis same\n", mtime=OLD + 100)

    assert found("tennis", master) == [
        "[memory/2026-01-03.md:1] (2026-01-03 Sat) - tennis same",
        "[memory/2026-01-02.md:1] (2026-01-02 Fri) - tennis a",
        "[memory/2026-01-02.md:2] (2026-01-02 Fri) - tennis b",
        "[memory/2026-01-02-1030.md:1] (2026-01-02 Fri) - tennis session",
        "[memory/2026-01-01.md:1] (2026-01-01 Thu) - tennis old",
    ]


def test_other_files_rank_by_mtime_among_the_notes(master, workspace):
    day = 1_767_225_600  # 2026-01-01 00:00 UTC
    put(workspace, "memory/2026-01-01.md", "- tennis in note\n", mtime=day + 5)
    put(workspace, "memory/racket.md", "- tennis by hand\n", mtime=day + 3600)
    put(workspace, "memory/old.md", "- tennis long ago\n", mtime=OLD)
    put(workspace, "memory/a-same.md", "- tennis same a\n", mtime=OLD + 10)
    put(workspace, "memory/b-same.md", "- tennis same b\n", mtime=OLD + 10)

    assert [hit.path for hit in search.search("tennis", agent=master)] == [
        "memory/racket.md",  # changed an hour into the day the note is of
        "memory/2026-01-01.md",  # a note counts from the start of its day
        "memory/b-same.md",
        "memory/a-same.md",
        "memory/old.md",
    ]


def test_it_ranks_more_matched_words_before_a_newer_file(master, workspace):
    put(workspace, "memory/2020-01-01.md", "- huyết áp 120/80 buổi sáng\n", mtime=OLD)
    put(workspace, "memory/2026-01-01.md", "- sáng nay trời mưa\n", mtime=OLD + 10**7)

    hits = search.search("huyet ap sang toi", agent=master)

    assert [(hit.path, hit.score) for hit in hits] == [
        ("memory/2020-01-01.md", 3),
        ("memory/2026-01-01.md", 1),
    ]


def test_an_edit_of_an_old_note_does_not_lift_it_but_an_edit_of_another_file_does(
    master, workspace
):
    put(workspace, "memory/2020-01-01.md", "- kayak trip\n", mtime=OLD)
    put(workspace, "memory/2021-01-01.md", "- kayak rental\n", mtime=OLD + 1000)
    put(workspace, "memory/boats.md", "- kayak brands\n", mtime=OLD - 10**8)
    assert [hit.path for hit in search.search("kayak", agent=master)] == [
        "memory/2021-01-01.md",
        "memory/2020-01-01.md",
        "memory/boats.md",
    ]

    files.append("memory/2020-01-01.md", "- kayak again\n")  # mtime is now: no matter
    files.append("memory/boats.md", "- kayak paddles\n")  # a hand-kept file: newest now

    assert [(hit.path, hit.line) for hit in search.search("kayak", agent=master)] == [
        ("memory/boats.md", 1),
        ("memory/boats.md", 2),
        ("memory/2021-01-01.md", 1),
        ("memory/2020-01-01.md", 1),
        ("memory/2020-01-01.md", 2),
    ]


# --- weight and length, pairs, neighbours, dates (SPEC §6.1) -------------------------------


def test_a_short_line_that_answers_outranks_a_long_entry_holding_more_common_words(
    master, workspace
):
    for day in range(1, 11):  # the question's small words stand everywhere
        put(workspace, f"memory/2026-01-{day:02d}.md", "- what did you do the day before? it\n")
    filler = " ".join(f"w{i}" for i in range(200))
    put(workspace, "memory/history.md", f"What did we do the day the vet came? {filler} it\n")
    put(workspace, "memory/2026-01-20.md", "- 09:00 the vet came: Mochi got her rabies shot\n")

    hits = search.search("what did the vet do the day it came", agent=master)

    # The long paragraph holds every word; the short line holds the rare ones.
    assert [hit.path for hit in hits[:2]] == ["memory/2026-01-20.md", "memory/history.md"]


def test_a_word_counts_inside_longer_words_only_when_none_starts_with_it(master, workspace):
    put(workspace, "MEMORY.md", "- Altmark flat: rent 900 a month, paid on the 1st\n")
    put(
        workspace,
        "memory/2026-01-05.md",
        "- Altmark current account: delinquency letter about the currency fee\n",
    )
    put(workspace, "memory/2026-01-06.md", "- scanned into mydocs today\n")

    hits = search.search("Altmark rent delinquency", agent=master)

    # `rent` stands whole in MEMORY.md: `current` and `currency` do not count for it.
    assert {hit.path: hit.matched for hit in hits} == {
        "MEMORY.md": ["altmark", "rent"],
        "memory/2026-01-05.md": ["altmark", "delinquency"],
    }
    (rent,) = [word for word in search.explain("rent", agent=master).words]
    assert (rent.forms, rent.entries) == (["rent"], 1)

    # Where no entry holds a word at a word's start, it is still found inside one.
    assert [hit.path for hit in search.search("docs", agent=master)] == ["memory/2026-01-06.md"]


def test_frontmatter_is_not_searched_and_a_title_counts_through_its_page(master, workspace):
    put(
        workspace,
        "memory/wiki/entities/dentist.md",
        "---\ntitle: Dentist\nstatus: ok\n---\n\nDr Lan at 12 Le Loi, Tuesdays 9:00\n",
    )
    put(workspace, "memory/2026-01-05.md", "- 08:00 status of the car: ok\n")

    assert [hit.path for hit in search.search("status ok", agent=master)] == [
        "memory/2026-01-05.md"
    ]
    assert found("dentist", master) == [
        "[memory/wiki/entities/dentist.md:6] (Dentist) Dr Lan at 12 Le Loi, Tuesdays 9:00"
    ]


def test_a_fact_is_found_by_its_name(master, workspace):
    facts.save_fact(
        "coffee-order",
        description="How I take it",
        type="preference",
        body="Black, no sugar.",
        written_by="owner",
        source="chat",
    )

    assert found("coffee", master) == [
        "[users/owner/facts/coffee-order.md] How I take it — Black, no sugar."
    ]


def test_words_side_by_side_in_the_query_and_the_entry_count_again(master, workspace):
    put(
        workspace,
        "memory/2026-01-05.md",
        "- ca sĩ hát quốc ca rất hay\n- quốc gia nào có nhiều ca sĩ hát\n",
        mtime=OLD,
    )

    # Both lines hold every word; only the first has `quốc ca` side by side.
    assert [hit.line for hit in search.search("ai hát quốc ca", agent=master)] == [1, 2]


def test_the_answer_after_a_question_is_lifted_by_it(master, workspace):
    put(
        workspace,
        "memory/2026-01-05.md",
        "\n".join(
            [
                "- 10:00 Lan: Which bakery makes the sourdough you brought?",
                "- 10:01 Minh: Hoa's, near the market",
                "- 10:02 Lan: the market is closed on Monday",
                "- 10:03 Minh: the bakery opens at six",
            ]
        )
        + "\n",
    )

    hits = search.search("Minh sourdough bakery", agent=master)

    # Line 2 holds only `minh`, but follows the question: it scores 0.9 of it.
    assert [hit.line for hit in hits][:2] == [1, 2]
    assert hits[1].weight == pytest.approx(0.9 * hits[0].weight, abs=0.002)
    # A line holding no word of the query is never a hit, whatever stands above it.
    assert 3 not in [hit.line for hit in hits]


def test_a_fact_is_lifted_by_the_line_after_it_that_names_what_it_is(master, workspace):
    put(
        workspace,
        "memory/2026-01-05.md",
        "\n".join(
            [
                "- 10:00 weather was grey",
                "- 10:05 the code is 4471",
                "- 10:06 that is the gate code of Lan's building on Tran Phu street",
                "- 10:30 lunch",
            ]
        )
        + "\n",
    )
    put(workspace, "memory/2026-01-06.md", "- 09:00 code review\n- 09:05 code freeze\n")

    hits = search.search("Lan gate code", agent=master)

    # Line 2 holds only `code`, as the next day's two lines do (newer: they would come
    # first), but the line after it names what it is: it scores 0.7 of that line (SPEC §6.1).
    assert [(hit.path, hit.line) for hit in hits] == [
        ("memory/2026-01-05.md", 3),
        ("memory/2026-01-05.md", 2),
        ("memory/2026-01-06.md", 1),
        ("memory/2026-01-06.md", 2),
    ]
    assert hits[1].weight == pytest.approx(0.7 * hits[0].weight, abs=0.002)
    # A line holding no word of the query is never a hit, whatever stands below it.
    assert 1 not in [hit.line for hit in hits if hit.path == "memory/2026-01-05.md"]


def test_the_line_before_a_candidate_is_scored_though_rarity_left_it_out(master, workspace):
    # 40 newer lines hold `code` and `gate`: the 30 candidates by rarity are theirs and the
    # line naming Lan's code; the fact before that line holds only `code`.
    lines = [f"- 08:{minute:02d} gate code check {minute}" for minute in range(40)]
    put(workspace, "memory/2026-03-01.md", "\n".join(lines) + "\n")
    put(
        workspace,
        "memory/2026-01-05.md",
        "- 10:05 code 4471\n- 10:06 that is the gate code of Lan's building\n",
    )

    hits = search.search("Lan gate code", agent=master, limit=3)

    assert [(hit.path, hit.line) for hit in hits] == [
        ("memory/2026-01-05.md", 2),
        ("memory/2026-01-05.md", 1),
        ("memory/2026-03-01.md", 1),
    ]


def test_the_dates_a_query_names_lift_the_notes_of_those_days(master, workspace, owner_today):
    yesterday = owner_today - dt.timedelta(days=1)
    put(workspace, "memory/2023-01-17.md", "- dinner with Lan at the noodle place\n")
    put(workspace, "memory/2024-03-02.md", "- dinner with Lan at home\n")
    put(workspace, f"memory/{yesterday}.md", "- lunch alone\n- dinner at the market\n")

    assert search.search("dinner January 2023", agent=master)[0].path == "memory/2023-01-17.md"
    assert search.search("dinner tháng 1 năm 2023", agent=master)[0].path == (
        "memory/2023-01-17.md"
    )
    assert search.search("dinner in March", agent=master)[0].path == "memory/2024-03-02.md"
    # A date alone finds that day's notes, even lines holding no other word of the query.
    assert [hit.text for hit in search.search("hôm qua", agent=master)] == [
        "- lunch alone",
        "- dinner at the market",
    ]
    assert search.search("dinner yesterday", agent=master)[0].path == f"memory/{yesterday}.md"


# --- limits ------------------------------------------------------------------------------


def test_it_returns_at_most_12_results_unless_asked(master, workspace):
    put(workspace, "memory/2026-01-05.md", "".join(f"- guava {n}\n" for n in range(30)))

    assert len(search.search("guava", agent=master)) == 12
    assert found("guava", master)[-1] == "[memory/2026-01-05.md:12] (2026-01-05 Mon) - guava 11"
    assert len(search.search("guava", agent=master, limit=3)) == 3
    assert len(search.search("guava", agent=master, limit=100)) == 30
    for bad in (0, 101, -1, "5", True):
        with pytest.raises(InvalidInput):
            search.search("guava", agent=master, limit=bad)


def test_it_cuts_text_at_700_characters(master, workspace):
    put(workspace, "memory/2026-01-05.md", "- papaya " + "x" * 1000 + "\n")
    facts.save_fact(
        "long",
        description="papaya fact",
        type="reference",
        body="y" * 900,
        written_by="owner",
        source="chat",
    )

    texts = [hit.text for hit in search.search("papaya", agent=master)]

    assert sorted(len(t) for t in texts) == [700, 700]
    assert all(t.endswith("…") for t in texts)
    assert "- papaya " + "x" * 690 + "…" in texts


def test_format_hits_is_one_line_per_hit_with_lines_date_and_heading():
    hits = [
        search.Hit("agent:master", "master", "memory/2026-01-05.md", 3, "- a", 1, 3, "2026-01-05"),
        search.Hit(
            "agent:master",
            "master",
            "memory/2026-01-05.md",
            5,
            "- b c",
            1,
            6,
            "2026-01-05",
            "## Ăn",
        ),
        search.Hit("agent:master", "master", "MEMORY.md", 2, "x", 1, 2, None, "# Memory"),
        search.Hit("agent:master", "master", "memory/books.md", 7, "y", 1),
        search.Hit("user", None, "users/owner/facts/x.md", None, "d — b", 1),
    ]

    assert search.format_hits(hits).split("\n") == [
        "[memory/2026-01-05.md:3] (2026-01-05 Mon) - a",
        "[memory/2026-01-05.md:L5-L6] (2026-01-05 Mon · ## Ăn) - b c",
        "[MEMORY.md:2] (# Memory) x",
        "[memory/books.md:7] y",
        "[users/owner/facts/x.md] d — b",
    ]
    assert search.format_hits([]) == ""


# --- never stale -------------------------------------------------------------------------


def test_a_hand_edit_shows_in_the_next_query(master, workspace):
    note = put(workspace, "memory/2020-01-01.md", "- lychee season\n", mtime=OLD)
    assert found("lychee", master) == ["[memory/2020-01-01.md:1] (2020-01-01 Wed) - lychee season"]

    with open(note, "a", encoding="utf-8") as handle:
        handle.write("- lychee jam\n")
    assert len(found("lychee", master)) == 2

    note.write_text("- nothing here\n", encoding="utf-8")
    assert found("lychee", master) == []

    note.unlink()
    assert found("nothing", master) == []


def test_a_same_size_edit_with_the_same_mtime_shows_in_the_next_query(master, workspace):
    note = put(workspace, "memory/2020-01-01.md", "- apricot\n", mtime=OLD)
    before = os.stat(note)
    assert found("apricot", master) == ["[memory/2020-01-01.md:1] (2020-01-01 Wed) - apricot"]

    # Rewritten in place (same inode), same size, mtime put back to the very nanosecond.
    with open(note, "r+", encoding="utf-8") as handle:
        handle.write("- avocado")
    os.utime(note, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(note)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )

    assert found("apricot", master) == []
    assert found("avocado", master) == ["[memory/2020-01-01.md:1] (2020-01-01 Wed) - avocado"]


def test_a_hand_edit_elsewhere_is_found_within_the_reconcile_bound(master, workspace, settings):
    put(workspace, "memory/2020-01-01.md", "- quince jam\n", mtime=OLD)
    put(workspace, "memory/2020-01-02.md", "- nothing yet\n", mtime=OLD)
    settings.MEMORY_SEARCH_RECONCILE_SECONDS = 0.5
    assert found("quince", master) == ["[memory/2020-01-01.md:1] (2020-01-01 Wed) - quince jam"]

    # By hand, in a file that held no hit: not known until the next reconcile …
    put(workspace, "memory/2020-01-02.md", "- quince paste\n", mtime=OLD)
    time.sleep(0.6)
    # … which the next query runs, once the last one is older than the bound.
    assert found("quince", master) == [
        "[memory/2020-01-02.md:1] (2020-01-02 Thu) - quince paste",
        "[memory/2020-01-01.md:1] (2020-01-01 Wed) - quince jam",
    ]


def test_an_app_write_is_in_the_very_next_query_whatever_the_bound(master, workspace, settings):
    put(workspace, "memory/2020-01-01.md", "- medlar pie\n", mtime=OLD)
    settings.MEMORY_SEARCH_RECONCILE_SECONDS = 3600
    assert len(found("medlar", master)) == 1

    files.append("memory/2020-01-02.md", "- medlar jelly\n", create_with="# 2020-01-02\n\n")
    files.write("memory/notes.md", "- medlar tree\n")

    assert found("medlar", master) == [
        "[memory/notes.md:1] - medlar tree",
        "[memory/2020-01-02.md:3] (2020-01-02 Thu) - medlar jelly",
        "[memory/2020-01-01.md:1] (2020-01-01 Wed) - medlar pie",
    ]
    files.delete("memory/notes.md")
    assert len(found("medlar", master)) == 2


def test_concurrent_searches_agree_while_a_writer_appends(master, workspace):
    put(workspace, "memory/2020-01-01.md", "".join(f"- fig {n}\n" for n in range(200)), mtime=OLD)
    for day in range(1, 29):
        put(workspace, f"memory/2021-02-{day:02d}.md", f"- other {day}\n", mtime=OLD + day)
    search.clear_cache()
    errors: list[BaseException] = []
    results: list[int] = []

    def reader() -> None:
        try:
            for _ in range(20):
                results.append(len(search.search("fig", agent=master, limit=100)))
        except BaseException as error:  # noqa: BLE001 — reported below
            errors.append(error)

    threads = [threading.Thread(target=reader) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert set(results) == {100}
    files.append("memory/2021-02-01.md", "- fig newest\n")
    assert found("fig", master)[0] == "[memory/2021-02-01.md:2] (2021-02-01 Mon) - fig newest"


def test_it_never_reads_through_a_symlink_out_of_the_workspace(
    master, helper_agent, workspace, tmp_path
):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "2026-01-05.md").write_text("- secret durian\n", encoding="utf-8")
    (workspace / "memory").mkdir(exist_ok=True)
    os.symlink(outside / "2026-01-05.md", workspace / "memory/2026-01-05.md")
    helper_memory = workspace / "agents/helper/memory"
    helper_memory.rmdir()
    os.symlink(outside, helper_memory)

    assert found("durian", master) == []
    assert found("durian", helper_agent) == []


def test_user_md_is_in_the_owners_window_and_its_explain_only(master, workspace, settings):
    # SPEC §6.2: the owner's search of everything reads USER.md; memory_search (§6.1), the
    # window for one agent and that agent's explain do not.
    put(workspace, "memory/2026-01-01.md", "- quokka photo\n")
    facts.write_user("# Me\n\n- my favourite animal: quokka\n")
    window = search.search_window("quokka")
    assert [(hit.scope, hit.agent, hit.path, hit.line, hit.end_line) for hit in window.hits] == [
        ("agent:master", "master", "memory/2026-01-01.md", 1, 1),  # shorter: BM25 length
        ("user", None, "users/owner/USER.md", 3, 3),
    ]
    assert window.total == 2
    assert [word.entries for word in search.explain("quokka").words] == [2]
    assert [word.entries for word in search.explain("quokka", agent=master).words] == [1]
    assert found("quokka", master) == ["[memory/2026-01-01.md:1] (2026-01-01 Thu) - quokka photo"]
    assert search.search("quokka", agent=None) == []
    assert [hit.path for hit in search.search_window("quokka", agent_id="master").hits] == [
        "memory/2026-01-01.md"
    ]
    # MEMORY_USER_FILE names another file: that one is USER.md, for search too.
    put(workspace, "profile/me.md", "- quokka keeper\n")
    settings.MEMORY_USER_FILE = "profile/me.md"
    settings.MEMORY_SEARCH_RECONCILE_SECONDS = 0
    assert {hit.path for hit in search.search_window("quokka").hits} == {
        "profile/me.md",
        "memory/2026-01-01.md",
    }


def test_a_querys_snapshot_lets_its_own_error_through_and_holds_nothing_after():
    """One read transaction a query (memory.search._snapshot): an error inside it — a
    damaged index — is what the caller sees, never a failed COMMIT, and no transaction
    is left open either way."""
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.execute("CREATE TABLE t(x)")
    with pytest.raises(sqlite3.DatabaseError, match="malformed"):
        with search._snapshot(db):
            assert db.execute("SELECT count(*) FROM t").fetchone() == (0,)
            assert db.in_transaction
            raise sqlite3.DatabaseError("database disk image is malformed")
    assert not db.in_transaction
    # SQLite itself ends the transaction on some errors (I/O, a corrupt page).
    with pytest.raises(sqlite3.DatabaseError, match="malformed"):
        with search._snapshot(db):
            db.execute("ROLLBACK")
            raise sqlite3.DatabaseError("database disk image is malformed")
    with search._snapshot(db):
        db.execute("SELECT * FROM t").fetchall()
    assert not db.in_transaction
