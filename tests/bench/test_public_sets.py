"""The converters of bench/public_sets.py: a public set's raw file in its own format
becomes notes shaped like the product's, and each question's gold lines are the lines its
annotation points at."""

from __future__ import annotations

import importlib.util
import json
import sys
import zipfile
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "public_sets.py"


@pytest.fixture(scope="module")
def sets():
    spec = importlib.util.spec_from_file_location("bench_public_sets", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def _locomo_zip(path: Path) -> Path:
    conversation = {
        "speaker_a": "Caroline",
        "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Caroline", "dia_id": "D1:1", "text": "Hey Mel!"},
            {
                "speaker": "Melanie",
                "dia_id": "D1:2",
                "text": "Look at\nthis.",
                "blip_caption": "a photo of a lake",
            },
        ],
        "session_2_date_time": "9:05 am on 25 May, 2023",
        "session_2": [{"speaker": "Caroline", "dia_id": "D2:5", "text": "Adoption news."}],
        "session_3_date_time": "1:00 pm on 1 June, 2023",  # a date with no session: no note
        "qa": [
            {"question": "What did Melanie share?", "evidence": ["D1:2"], "category": 4},
            {"question": "When?", "evidence": ["D1:1; D:2:05"], "category": 2},
            {"question": "Not stated?", "evidence": ["D1:1"], "category": 5},
            {"question": "No evidence?", "evidence": [], "category": 1},
            {"question": "A turn that is not there?", "evidence": ["D2:9"], "category": 3},
        ],
    }
    archive = path / "locomo10.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("data/multimodal_dialog/locomo10_v2/26.json", json.dumps(conversation))
    return archive


def test_it_writes_a_daily_note_per_session_day_with_a_line_per_turn(sets, tmp_path):
    labelled = sets.convert_locomo(_locomo_zip(tmp_path))
    assert labelled.files == {
        "locomo-26": {
            "memory/2023-05-08.md": (
                "# 2023-05-08\n\n"
                "- 13:56 Caroline: Hey Mel!\n"
                "- 13:56 Melanie: Look at this. [shares a photo of a lake]\n"
            ),
            "memory/2023-05-25.md": "# 2023-05-25\n\n- 09:05 Caroline: Adoption news.\n",
        }
    }


def test_it_labels_each_question_with_its_evidence_lines_and_kind(sets, tmp_path):
    labelled = sets.convert_locomo(_locomo_zip(tmp_path))
    asked = [(q.kind, q.text, q.scope, q.answers) for q in labelled.questions]
    assert asked == [
        ("single-hop", "What did Melanie share?", "locomo-26", [("memory/2023-05-08.md", 4)]),
        (
            "temporal",
            "When?",
            "locomo-26",
            [("memory/2023-05-08.md", 3), ("memory/2023-05-25.md", 3)],
        ),
        ("adversarial", "Not stated?", "locomo-26", [("memory/2023-05-08.md", 3)]),
    ]
    assert labelled.left_out == {"no evidence": 1, "evidence names no turn": 1}


def _xquad(path: Path) -> Path:
    context = (
        "Warsaw là thủ đô của Ba Lan. Thành phố có 1,7 triệu dân và 2 sân bay.\n"
        "Sông Vistula chảy qua Warsaw. Có 2 cây cầu cổ."
    )
    data = {
        "version": "1.1",
        "data": [
            {
                "title": "Warsaw_(city)",
                "paragraphs": [
                    {
                        "context": context,
                        "qas": [
                            {
                                "id": "q1",
                                "question": "Sông nào chảy qua Warsaw?",
                                "answers": [{"text": "Vistula", "answer_start": 75}],
                            },
                            {
                                "id": "q2",
                                "question": "Warsaw có bao nhiêu sân bay?",
                                "answers": [{"text": "2", "answer_start": 59}],
                            },
                        ],
                    }
                ],
            }
        ],
    }
    raw = path / "xquad.vi.json"
    raw.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return raw


def test_it_writes_paragraphs_as_lines_and_sentences_as_items(sets, tmp_path):
    labelled = sets.convert_xquad_vi(_xquad(tmp_path))
    assert labelled.files["xquad-vi-paragraphs"] == {
        "memory/warsaw-city.md": (
            "# Warsaw (city)\n\n"
            "Warsaw là thủ đô của Ba Lan. Thành phố có 1,7 triệu dân và 2 sân bay. "
            "Sông Vistula chảy qua Warsaw. Có 2 cây cầu cổ.\n"
        )
    }
    assert labelled.files["xquad-vi-sentences"] == {
        "memory/warsaw-city.md": (
            "# Warsaw (city)\n\n"
            "- Warsaw là thủ đô của Ba Lan.\n"
            "- Thành phố có 1,7 triệu dân và 2 sân bay.\n"
            "- Sông Vistula chảy qua Warsaw.\n"
            "- Có 2 cây cầu cổ.\n"
        )
    }


def test_it_asks_each_question_with_and_without_marks_at_both_levels(sets, tmp_path):
    labelled = sets.convert_xquad_vi(_xquad(tmp_path))
    asked = [(q.kind, q.text, q.answers) for q in labelled.questions]
    note = "memory/warsaw-city.md"
    assert asked == [
        ("paragraph", "Sông nào chảy qua Warsaw?", [(note, 3)]),
        ("paragraph, no marks", "Song nao chay qua Warsaw?", [(note, 3)]),
        ("sentence", "Sông nào chảy qua Warsaw?", [(note, 5)]),
        ("sentence, no marks", "Song nao chay qua Warsaw?", [(note, 5)]),
        # "2" occurs twice in its paragraph: which sentence answers is not known.
        ("paragraph", "Warsaw có bao nhiêu sân bay?", [(note, 3)]),
        ("paragraph, no marks", "Warsaw co bao nhieu san bay?", [(note, 3)]),
    ]
    assert labelled.left_out == {sets._REPEATED: 1}


def test_it_splits_sentences_but_not_at_initials_or_abbreviations(sets):
    text = "J. R. R. Tolkien sống ở Bắc Mỹ. Các TP. Hồ Chí Minh lớn. vẫn tiếp"
    pieces = [text[a:b] for a, b in sets.sentence_spans(text)]
    assert pieces == ["J. R. R. Tolkien sống ở Bắc Mỹ. ", "Các TP. Hồ Chí Minh lớn. vẫn tiếp"]


def test_it_says_how_to_place_a_raw_file_that_is_absent(sets, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMORY_BENCH_DATA", str(tmp_path))
    monkeypatch.delenv("MEMORY_BENCH_LOCOMO", raising=False)
    with pytest.raises(sets.Absent) as absent:
        sets.load("locomo")
    assert str(absent.value) == (
        f"locomo: no raw file ({tmp_path}/raw/locomo10.zip is absent; MEMORY_BENCH_LOCOMO "
        "is not set). Fetch github:snap-research/locomo and run `python bench/public_sets.py "
        "place locomo <its git dir or data/locomo10.zip>`, or point MEMORY_BENCH_LOCOMO at "
        "locomo10.zip (commit e76cdff4a04f)."
    )


def test_it_converts_once_and_reads_the_cache_after(sets, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMORY_BENCH_DATA", str(tmp_path / "data"))
    raw = _xquad(tmp_path)
    first = sets.load("xquad-vi", raw)
    cached = sorted(p.name for p in (tmp_path / "data" / "converted").iterdir())
    assert cached == [f"xquad-vi-{sets.sha256_of(raw)[:12]}-v{sets.CONVERTER}"]
    again = sets.load("xquad-vi", raw)
    assert again.files == first.files
    assert again.questions == first.questions
    assert again.left_out == first.left_out
