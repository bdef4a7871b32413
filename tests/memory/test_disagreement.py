"""A proposed line that disagrees with a line the file holds (memory.disagreement, SPEC §7):
the same subject, a different day, number or name — in English and in Vietnamese, words
folded (case and marks do not matter)."""

from __future__ import annotations

import pytest

from memory.disagreement import disagreement, disagreements, words_of


@pytest.mark.parametrize(
    ("proposed", "existing", "differs"),
    [
        # The demo: the report moved from Friday to Thursday.
        (
            "Báo cáo tài chính gửi anh Minh mỗi thứ Năm trước 17:00. (2026-01-05)",
            "- Báo cáo tài chính gửi anh Minh mỗi thứ Sáu trước 17:00. (2025-12-01)",
            (("day", "thứ Sáu", "thứ Năm"),),
        ),
        (
            "Weekly report goes to Minh on Thursdays before 17:00",
            "- Weekly report goes to Minh on Fridays before 17:00",
            (("day", "Fridays", "Thursdays"),),
        ),
        (
            "- Chạy bộ chủ nhật quanh cầu Rồng",
            "- Chạy bộ thứ Bảy quanh cầu Rồng",
            (("day", "thứ Bảy", "chủ nhật"),),
        ),
        ("Run 10 km on Tuesdays", "- Run 5 km on Tuesdays", (("number", "5", "10"),)),
        (
            "Ngưỡng huyết áp cần nhắc: trên 150/95.",
            "- Ngưỡng huyết áp cần nhắc: trên 140/90. (2025-01-01)",
            (("number", "140/90", "150/95"),),
        ),
        (
            "Morning bulletin goes out at 07:30 on Telegram.",
            "- Morning bulletin goes out at 07:00 on Telegram.",
            (("number", "07:00", "07:30"),),
        ),
        (
            "Report goes to Hoa every Friday",
            "- Report goes to Minh every Friday",
            (("name", "Minh", "Hoa"),),
        ),
        # Folded words: marks and case do not make a difference of their own.
        (
            "bao cao gui anh minh moi THU NAM truoc 17:00",
            "- Báo cáo gửi anh Minh mỗi thứ Sáu trước 17:00",
            (("day", "thứ Sáu", "THU NAM"),),
        ),
    ],
)
def test_it_flags_the_same_subject_with_another_value(proposed, existing, differs):
    assert disagreement(proposed, existing) == differs


@pytest.mark.parametrize(
    ("proposed", "existing"),
    [
        ("Swim 5 km on Tuesdays", "- Run 5 km on Tuesdays"),  # another subject
        ("Likes green tea", "- Likes tea"),  # adds to it
        (
            "Lịch chạy bộ: thứ Ba, thứ Năm, 5 km quanh cầu Rồng.",
            "- Lịch chạy bộ: thứ Ba, thứ Năm, 5 km quanh cầu Rồng. (2026-01-01)",
        ),  # the same line, confirmed another day
        ("Lan lives in Hà Nội", "- Lan lives in Đà Nẵng; time zone Asia/Ho_Chi_Minh."),
        ("Đọc sách trước khi ngủ", "- Báo cáo gửi anh Minh mỗi thứ Sáu"),
    ],
)
def test_it_leaves_other_subjects_and_agreeing_lines_alone(proposed, existing):
    assert disagreement(proposed, existing) == ()


def test_a_vietnamese_day_is_one_word_and_a_lone_sau_is_after():
    days = [(w.key, w.kind) for w in words_of("Họp thứ Sáu, sau đó chủ nhật nghỉ")]
    assert ("thu sau", "day") in days and ("chu nhat", "day") in days
    assert ("sau", "") in days


def test_it_names_the_existing_line_and_its_number():
    text = "# MEMORY.md\n\n## Công việc\n\n- Báo cáo gửi anh Minh mỗi thứ Sáu trước 17:00.\n"
    found = disagreements(["Báo cáo gửi anh Minh mỗi thứ Năm trước 17:00."], text)
    assert [(d.number, d.existing, d.differs) for d in found] == [
        (5, "- Báo cáo gửi anh Minh mỗi thứ Sáu trước 17:00.", (("day", "thứ Sáu", "thứ Năm"),))
    ]
    assert disagreements(["- Báo cáo gửi anh Minh mỗi thứ Sáu trước 17:00."], text) == []
