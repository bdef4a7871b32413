"""The labelled set of bench/recall.py: daily notes a person could have written, and
questions whose answering lines are known.

Everything is generated from the templates and word lists below with one seeded random
generator, so the set is reproducible and licence-clean (no text comes from anywhere
else). See bench/README.md for what it holds and how it is scored.

`build(seed)` returns a `Corpus`: `files` (workspace-relative path → text), `mtimes`
(path → seconds) and `questions` (each with its kind, language, text and the (path, line)
pairs that answer it, lines 1-based as memory_get numbers them).
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field

START = dt.date(2023, 1, 1)
DAYS = 1096  # three years of daily notes: 2023-01-01 … 2025-12-31
SESSION_SHARE = 0.87  # share of days that also have a suffixed note (a chat session)
QUESTIONS_PER_KIND = 60

KINDS = ("single", "two_lines", "when", "unmarked", "changed", "paraphrase")

# --- word lists ----------------------------------------------------------------------

VI_PEOPLE = [
    ("Nguyễn Văn Hùng", "anh Hùng"),
    ("Trần Thị Mai", "chị Mai"),
    ("Lê Minh Tuấn", "anh Tuấn"),
    ("Phạm Đức Anh", "anh Đức Anh"),
    ("Đặng Thu Hà", "chị Hà"),
    ("Võ Quốc Bảo", "anh Bảo"),
    ("Huỳnh Ngọc Lan", "chị Lan"),
    ("Bùi Thanh Tâm", "anh Tâm"),
    ("Đỗ Hoàng Nam", "anh Nam"),
    ("Hồ Thị Thảo", "chị Thảo"),
    ("Ngô Gia Huy", "anh Huy"),
    ("Dương Minh Châu", "chị Châu"),
    ("Đinh Công Đạt", "anh Đạt"),
    ("Lý Thu Trang", "chị Trang"),
    ("Trương Văn Đông", "anh Đông"),
    ("Phan Thị Hồng", "cô Hồng"),
    ("Vũ Đình Khoa", "anh Khoa"),
    ("Cao Thị Diệu", "chị Diệu"),
    ("Tạ Quang Đức", "anh Đức"),
    ("Mai Xuân Đào", "cô Đào"),
]
# People whose names hold đ/Đ; their look-alikes (same name, every word with đ/Đ swapped
# for another) are what the unmarked questions must tell apart.
D_PEOPLE = [
    "Đặng Thu Hà",
    "Đỗ Hoàng Nam",
    "Đinh Công Đạt",
    "Phạm Đức Anh",
    "Tạ Quang Đức",
    "Trương Văn Đông",
    "Vũ Đình Khoa",
    "Mai Xuân Đào",
    "Đặng Minh Châu",
    "Đoàn Văn Hậu",
    "Đào Thị Huệ",
    "Đồng Thanh Tùng",
]
SWAPS = ["Lê", "Trần", "Võ", "Ngô", "Bùi", "Minh", "Huy", "Sơn", "Tâm", "Phúc", "Lý", "Hồ"]
LOOK_ALIKES = 5
D_HOTELS = [
    ("Hoàng Đạo", "Hoàng Gia"),
    ("Đông Dương", "Tây Dương"),
    ("Đồi Thông", "Rừng Thông"),
    ("Bạch Đằng", "Bạch Mai"),
    ("Đại Dương", "Hải Dương"),
    ("Sông Đà", "Sông Hàn"),
]
VI_PEOPLE_EXTRA = [
    "mẹ",
    "bố",
    "bà ngoại",
    "bé Na",
    "bé Bin",
    "vợ",
    "chú Sáu",
    "dì Tư",
    "anh hàng xóm",
]
EN_PEOPLE = [
    "Anna",
    "Tom Becker",
    "Priya",
    "Marcus",
    "Sophie",
    "Kenji",
    "Olivia",
    "Daniel",
    "Chloe",
    "Rafael",
    "Ingrid",
    "Samuel",
    "Hannah",
    "Victor",
    "Leila",
    "Oscar",
]
ZH_PEOPLE = ["王伟", "李娜", "张强", "陈静", "刘洋", "赵敏", "黄磊", "周杰"]
VI_PLACES = [
    "Đà Lạt",
    "Đà Nẵng",
    "Hội An",
    "Hà Nội",
    "Sài Gòn",
    "Vũng Tàu",
    "Nha Trang",
    "Phú Quốc",
    "Cần Thơ",
    "Huế",
    "Đồng Nai",
    "Quy Nhơn",
    "Hạ Long",
    "Đắk Lắk",
    "Bình Dương",
    "Thủ Đức",
]
VI_STREETS = [
    "đường Lê Lợi",
    "đường Nguyễn Huệ",
    "đường Điện Biên Phủ",
    "đường Đinh Tiên Hoàng",
    "đường Trần Hưng Đạo",
    "đường Võ Văn Tần",
    "đường Hai Bà Trưng",
    "đường Đồng Khởi",
    "đường Pasteur",
    "đường Lý Tự Trọng",
]
EN_CITIES = [
    "Singapore",
    "Bangkok",
    "Tokyo",
    "Seoul",
    "Berlin",
    "Lisbon",
    "Melbourne",
    "Vancouver",
    "Osaka",
    "Taipei",
    "Kuala Lumpur",
    "Copenhagen",
]
ZH_PLACES = ["上海", "北京", "大同", "成都", "深圳", "杭州", "西安", "厦门"]
VI_FOODS = [
    "phở bò",
    "bún chả",
    "bánh xèo",
    "cơm tấm",
    "hủ tiếu",
    "bún bò Huế",
    "gỏi cuốn",
    "cá kho tộ",
    "lẩu thái",
    "bánh canh cua",
    "mì Quảng",
    "chè đậu đỏ",
]
CAFES = ["Cộng", "Highlands", "The Workshop", "Phúc Long", "Trung Nguyên", "Katinat", "Lofita"]
PROJECTS = ["Eco Retreat", "Sunrise", "Lotus", "Bamboo", "Harbor", "Atlas", "Mekong", "Orchid"]
BOOKS = [
    "Dune",
    "Nhà giả kim",
    "Sapiens",
    "Rừng Na Uy",
    "Atomic Habits",
    "Số đỏ",
    "The Overstory",
    "Dế mèn phiêu lưu ký",
    "Klara and the Sun",
    "Tôi thấy hoa vàng trên cỏ xanh",
]
BRANDS = ["Yamaha", "Casio", "Roland", "Honda", "Toyota", "Dell", "Lenovo", "Philips"]
CLINICS = ["Hoàn Mỹ", "Vinmec", "FV", "Tâm Anh", "Family Medical", "Raffles"]
COMPANIES = ["Bảo Việt", "Prudential", "Liberty", "PVI", "Manulife", "AIA"]
AIRLINES = ["Vietnam Airlines", "Bamboo Airways", "Vietjet", "Singapore Airlines", "ANA"]
MONTHS_EN = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
CODE_WORDS = ["hoa-sen", "ca-phe", "mua-thu", "bien-xanh", "sao-dem", "gio-nam", "trang-tron"]
EN_CODE_WORDS = ["maple", "harbor", "falcon", "copper", "juniper", "cobalt", "saffron"]


# --- filler: the everyday lines that make up most notes ----------------------------
#
# Sentences are put together from parts (who, what, where, a comment), so the notes have
# a wide vocabulary and small words ("the", "với", "是") as often as a person's notes do.

VI_SUBJECTS = ["mình", "mình với vợ", "cả nhà", "em", "sếp", "team", "hai vợ chồng", "mẹ", "bố"]
VI_ACTIVITIES = [
    "đi siêu thị mua đồ cho cả tuần",
    "ngồi làm việc ở quán cà phê {cafe}",
    "ăn {food} ở một quán mới mở gần {street}",
    "gặp {person} bàn chuyện dự án {project}",
    "dọn lại tủ quần áo, bỏ bớt đồ cũ",
    "đi bộ quanh hồ một vòng cho khỏe",
    "xem lại hợp đồng thuê nhà trước khi ký",
    "đặt vé xe đi {place} cuối tuần",
    "sửa cái vòi nước trong bếp bị rỉ",
    "nấu {food} cho bữa tối",
    "đưa {kin} đi khám sức khỏe định kỳ",
    "học thêm một khóa về quản lý tài chính",
    "chuẩn bị slide cho buổi thuyết trình",
    "đi tập yoga ở trung tâm gần nhà",
    "đổi dầu ăn, mua thêm nước mắm và đường",
    "gọi video cho {kin} hỏi thăm sức khỏe",
    "làm hồ sơ xin visa đi {city}",
    "viết email trả lời khách hàng về báo giá",
    "thử công thức {food} mới trên mạng",
    "rửa xe máy, bơm lại bánh xe",
    "đọc tin tức buổi sáng, giá vàng lại tăng",
    "nói chuyện với {person} về chuyện học của con",
    "kiểm tra lại sổ chi tiêu của tháng {month}",
    "trồng thêm mấy chậu rau thơm ngoài ban công",
]
VI_COMMENTS = [
    "khá vui",
    "hơi mệt nhưng ổn",
    "không như mong đợi",
    "phải làm lại vào tuần sau",
    "tốn nhiều thời gian hơn dự tính",
    "nhớ ghi lại để lần sau khỏi quên",
    "trời thì nóng quá",
    "được cái là rẻ",
    "cần hỏi thêm ý kiến của vợ",
    "xong sớm hơn mọi khi",
    "chắc sẽ quay lại lần nữa",
    "",
]
VI_TIMES = [
    "sáng nay",
    "trưa nay",
    "chiều nay",
    "tối nay",
    "hôm nay",
    "sáng sớm",
    "cuối giờ chiều",
    "",
]
VI_UNMARKED = [
    "di cho mua do an cho ca tuan, het {n}k",
    "hop voi {uperson} ve ke hoach quy {q}, chua chot",
    "an toi voi gia dinh o nha, mon {ufood} ngon",
    "chay bo {n2} km buoi sang, troi mat",
    "nho goi lai cho {uperson} truoc thu sau",
    "troi nong qua nen o nha lam viec ca ngay",
    "doc sach {n2}0 trang truoc khi di ngu",
    "don phong lam viec, vut bot giay to cu",
    "ghe nha {uperson} choi, noi chuyen toi khuya",
    "xe bi xit lop tren duong di lam",
    "dat lich cat toc vao cuoi tuan",
    "mua qua sinh nhat cho {uperson}",
]
EN_SUBJECTS = ["I", "we", "the team", "Anna and I", "my manager", "the kids", "everyone"]
EN_ACTIVITIES = [
    "spent the morning on the {project} roadmap",
    "had coffee with {en_person} at {cafe}",
    "went through the backlog with {en_person}",
    "cleaned up the garage and found the old tent",
    "cooked a big pot of soup for the week",
    "took the long way home through the park",
    "finally fixed the flaky test in the build",
    "looked at flats near the river with {en_person}",
    "called the bank about a charge on the card",
    "booked a table for Friday at the Italian place",
    "reviewed the contract draft from the lawyer",
    "walked to the market and bought fruit",
    "watched a documentary about deep sea fish",
    "wrote the monthly update for {project}",
    "did a long run, {n} km, felt strong",
    "helped {en_person} move a sofa up three floors",
    "planned the weekend trip to {city}",
    "had a one to one with {en_person} about goals",
    "tried a new recipe with lentils and spinach",
    "sorted the receipts for the tax return",
    "read a chapter of {book} on the train",
    "replaced the batteries in the smoke alarm",
    "played board games with friends until late",
    "the heating is making a noise again",
]
EN_COMMENTS = [
    "it was a good day",
    "not as bad as I feared",
    "need to follow up next week",
    "took longer than planned",
    "worth it",
    "should do this more often",
    "the weather was terrible",
    "nothing special",
    "I am tired but happy",
    "",
]
ZH_FILLER = [
    "今天和{zh}一起吃午饭，聊了很多",
    "在{zhp}出差，天气很好",
    "晚上读了一会儿书，然后早点睡觉",
    "跑步五公里，感觉不错",
    "给{zh}打电话，说了工作的事情",
    "心情不错，写完了这周的周报",
    "下午开会讨论新的项目计划",
    "周末去超市买了很多水果",
]


def _fill(r: random.Random, template: str) -> str:
    return template.format(
        cafe=r.choice(CAFES),
        food=r.choice(VI_FOODS),
        street=r.choice(VI_STREETS),
        person=r.choice(VI_PEOPLE)[1],
        project=r.choice(PROJECTS),
        place=r.choice(VI_PLACES),
        kin=r.choice(VI_PEOPLE_EXTRA),
        city=r.choice(EN_CITIES),
        month=r.randint(1, 12),
        en_person=r.choice(EN_PEOPLE),
        n=r.randint(3, 21),
        n2=r.randint(2, 9),
        q=r.randint(1, 4),
        book=r.choice(BOOKS),
        uperson=r.choice(["anh Hung", "chi Mai", "anh Tuan", "chi Ha", "anh Bao", "anh Nam"]),
        ufood=r.choice(["pho", "bun", "com tam", "canh chua"]),
        zh=r.choice(ZH_PEOPLE),
        zhp=r.choice(ZH_PLACES),
    )


def _vi_filler(r: random.Random) -> str:
    parts = [r.choice(VI_TIMES), r.choice(VI_SUBJECTS), _fill(r, r.choice(VI_ACTIVITIES))]
    sentence = " ".join(part for part in parts if part)
    comment = r.choice(VI_COMMENTS)
    return f"{sentence[0].upper()}{sentence[1:]}" + (f", {comment}" if comment else "")


def _en_filler(r: random.Random) -> str:
    activity = _fill(r, r.choice(EN_ACTIVITIES))
    if not activity.startswith(("the ", "had ")) and r.random() < 0.6:
        activity = f"{r.choice(EN_SUBJECTS)} {activity}"
    comment = r.choice(EN_COMMENTS)
    return activity[0].upper() + activity[1:] + (f", {comment}" if comment else "")


def _filler(r: random.Random) -> str:
    roll = r.random()
    if roll < 0.45:
        return _vi_filler(r)
    if roll < 0.60:
        return _fill(r, r.choice(VI_UNMARKED))
    if roll < 0.95:
        return _en_filler(r)
    return _fill(r, r.choice(ZH_FILLER))


# --- planted facts and their questions --------------------------------------------


@dataclass
class Plant:
    """Lines to put into one note: `lines` (the entry, one or more lines) and which of
    them answer (`answer` indexes into lines; empty for a distractor)."""

    day: int  # index into the days
    lines: list[str]
    answer: list[int] = field(default_factory=list)
    session: bool = False  # into the day's suffixed note rather than the plain one


@dataclass
class Question:
    kind: str
    language: str  # "vi", "vi-unmarked", "en", "zh"
    text: str
    answers: list[tuple[str, int]] = field(default_factory=list)  # (path, 1-based line)


@dataclass
class Corpus:
    files: dict[str, str]
    mtimes: dict[str, float]
    questions: list[Question]


def _time(r: random.Random) -> str:
    return f"{r.randint(6, 22):02d}:{r.choice([0, 5, 10, 15, 20, 30, 40, 45, 50]):02d}"


def _bullet(r: random.Random, text: str) -> str:
    return f"- {_time(r)} {text}"


class _Maker:
    """Makes one question of a kind with its plants (the answer and distractors)."""

    def __init__(self, r: random.Random) -> None:
        self.r = r
        self.used: set[str] = set()

    def unique(self, make) -> str:
        for _ in range(200):
            value = make()
            if value not in self.used:
                self.used.add(value)
                return value
        raise RuntimeError("word lists too small for the number of questions")

    def unique_pair(self, pairs: list[tuple[str, str]], salt: str) -> tuple[str, str]:
        for _ in range(200):
            pair = self.r.choice(pairs)
            if f"{pair}/{salt}" not in self.used:
                self.used.add(f"{pair}/{salt}")
                return pair
        raise RuntimeError("word lists too small for the number of questions")

    def day(self, low: int = 0, high: int = DAYS - 1) -> int:
        return self.r.randint(low, high)

    # Each maker returns (language, question text, answer plant, distractor plants).

    # --- single: one fact on one line --------------------------------------------------

    def single(self) -> tuple[str, str, Plant, list[Plant]]:
        r = self.r
        choice = r.randrange(8)
        day = self.day()
        if choice == 0:
            full, short = r.choice(VI_PEOPLE)
            code = self.unique(lambda: f"{r.choice(CODE_WORDS)}-{r.randint(10, 99)}")
            answer = _bullet(r, f"Mật khẩu wifi nhà {short} là {code}")
            question = f"mật khẩu wifi nhà {short} là gì?"
            distractors = [
                _bullet(r, f"wifi ở quán {r.choice(CAFES)} chậm quá"),
                _bullet(r, f"qua nhà {short} ăn cơm tối"),
            ]
            language = "vi"
        elif choice == 1:
            thing = r.choice(["máy lạnh", "máy giặt", "tủ lạnh", "xe máy", "bình nóng lạnh"])
            name = self.unique(lambda: r.choice(VI_PEOPLE)[1] + f" {thing}")
            phone = f"09{r.randint(10000000, 99999999)}"
            answer = _bullet(r, f"Số điện thoại thợ sửa {thing} ({name.split(' ')[1]}): {phone}")
            question = f"số điện thoại của thợ sửa {thing}"
            distractors = [
                _bullet(r, f"{thing} nhà mình lại kêu to"),
                _bullet(r, f"gọi điện thoại cho {r.choice(VI_PEOPLE_EXTRA)}"),
            ]
            language = "vi"
        elif choice == 2:
            full, short = r.choice(VI_PEOPLE)
            food = r.choice(VI_FOODS)
            other = r.choice([f for f in VI_FOODS if f != food])
            self.unique(lambda: f"food-{short}-{food}")
            answer = _bullet(r, f"{full} thích ăn {food}, không ăn được {other}")
            question = f"{short} thích ăn món gì"
            distractors = [
                _bullet(r, f"ăn {food} với {r.choice(VI_PEOPLE)[1]}"),
                _bullet(r, f"{short} nói tuần sau bận"),
            ]
            language = "vi"
        elif choice == 3:
            person = r.choice(EN_PEOPLE)
            child = self.unique(lambda: r.choice(["Ella", "Noah", "Mia", "Leo", "Zoe", "Finn"]))
            answer = _bullet(
                r, f"{person}'s daughter is called {child}, she turns {r.randint(3, 12)} soon"
            )
            question = f"what is the name of {person}'s daughter?"
            distractors = [
                _bullet(r, f"{person} is on holiday until Friday"),
                _bullet(r, "what is the name of that Thai restaurant again"),
            ]
            language = "en"
        elif choice == 4:
            building = self.unique(
                lambda: r.choice(["Bitexco", "Landmark", "Vincom", "Saigon Centre"])
                + f" {r.randint(1, 9)}"
            )
            level, slot = r.randint(1, 5), r.randint(10, 300)
            answer = _bullet(r, f"Parking at {building}: basement B{level}, spot {slot}")
            question = f"where did I park at {building}?"
            distractors = [
                _bullet(r, f"meeting at {building.split()[0]} with {r.choice(EN_PEOPLE)}"),
                _bullet(r, "the parking fee went up again"),
            ]
            language = "en"
        elif choice == 5:
            gym = self.unique(
                lambda: r.choice(["California", "Elite", "Fit24", "Jetts"])
                + f" {r.choice(['Q1', 'Q3', 'Q7', 'Thao Dien'])}"
            )
            code = f"{r.randint(1000, 9999)}"
            answer = _bullet(r, f"Locker code at the {gym} gym is {code}")
            question = f"what is my locker code at the {gym} gym"
            distractors = [
                _bullet(r, f"gym session at {gym}, {r.randint(40, 90)} minutes"),
                _bullet(r, "new code for the office door"),
            ]
            language = "en"
        elif choice == 6:
            person = self.unique(lambda: r.choice(ZH_PEOPLE) + r.choice(["", "先生", "女士"]))
            month, dom = r.randint(1, 12), r.randint(1, 28)
            answer = _bullet(r, f"{person}的生日是{month}月{dom}日")
            question = f"{person} 生日"
            distractors = [
                _bullet(r, f"今天和{person}一起吃午饭"),
                _bullet(r, "下个月是妈妈的生日"),
            ]
            language = "zh"
        else:
            full, short = r.choice(VI_PEOPLE)
            size = self.unique(lambda: f"{short}-{r.randint(36, 44)}")
            answer = _bullet(r, f"{short} đi giày size {size.split('-')[1]}, áo size M")
            question = f"{short} đi giày size mấy"
            distractors = [
                _bullet(r, "mua giày chạy bộ mới cho mình"),
                _bullet(r, f"{short} gửi ảnh đi {r.choice(VI_PLACES)}"),
            ]
            language = "vi"
        plant = Plant(day, [answer], [0], session=r.random() < 0.3)
        return language, question, plant, [Plant(self.day(), [d]) for d in distractors]

    # --- two_lines: the words of the question are split over two adjacent lines ----

    def two_lines(self) -> tuple[str, str, Plant, list[Plant]]:
        r = self.r
        choice = r.randrange(6)
        day = self.day()
        if choice == 0:
            doctor = self.unique(
                lambda: r.choice(["Lan", "Minh", "Phương", "Khang", "Tú", "Hiền"])
                + "/"
                + r.choice(["cholesterol", "đường huyết", "men gan", "axit uric"])
            )
            name, marker = doctor.split("/")
            lines = [
                f"- {_time(r)} Gặp bác sĩ {name} ở {r.choice(CLINICS)} lấy kết quả xét nghiệm,",
                f"  bác sĩ dặn {marker} hơi cao, giảm đồ ngọt, tái khám sau {r.randint(2, 8)} tuần",
            ]
            question = f"bác sĩ {name} dặn gì về {marker}"
            distractors = [
                _bullet(r, f"đưa mẹ đi bác sĩ {name} khám mắt"),
                _bullet(r, f"đọc bài báo về {marker}"),
            ]
            language = "vi"
        elif choice == 1:
            person = r.choice(EN_PEOPLE)
            project = self.unique(
                lambda: r.choice(PROJECTS)
                + f" {r.choice(['phase 1', 'phase 2', 'pilot', 'launch'])}"
            )
            amount = f"{r.randint(5, 95)},000 dollars"
            lines = [
                f"- {_time(r)} Long call with {person} about the {project} budget.",
                f"  We agreed on {amount}, signed off by Friday",
            ]
            question = f"how much did {person} and I agree on for {project}?"
            distractors = [
                _bullet(r, f"{person} sent the {project} timeline"),
                _bullet(r, "budget review moved to next week"),
            ]
            language = "en"
        elif choice == 2:
            trade = self.unique(
                lambda: r.choice(["plumber", "electrician", "carpenter", "painter"])
                + "/"
                + r.choice(["kitchen sink", "bathroom fan", "balcony door", "garage light"])
            )
            who, fix = trade.split("/")
            lines = [
                f"The {who} came this morning for the {fix}.",
                f"He charged {r.randint(20, 90)} dollars and said it will hold for years.",
            ]
            question = f"how much did the {who} charge for the {fix}"
            distractors = [
                _bullet(r, f"the {fix.split()[0]} needs cleaning"),
                _bullet(r, f"call the {who} next month"),
            ]
            language = "en"
        elif choice == 3:
            full, short = r.choice(VI_PEOPLE)
            place = self.unique(lambda: f"{short}/{r.choice(VI_PLACES)}")
            where = place.split("/")[1]
            lines = [
                f"- {_time(r)} {short} kể chuyện công ty sắp chuyển văn phòng,",
                f"  chắc cuối năm sẽ ra {where} làm việc luôn",
            ]
            question = f"{short} chuyển văn phòng ra đâu"
            distractors = [
                _bullet(r, f"{short} đi công tác ba ngày"),
                _bullet(r, f"văn phòng mới của mình ở {r.choice(VI_STREETS)}"),
            ]
            language = "vi"
        elif choice == 4:
            child = r.choice(["bé Na", "bé Bin"])
            teacher = self.unique(
                lambda: f"{child}/{r.choice(['Hằng', 'Loan', 'Quyên', 'Ngân', 'Oanh', 'Trinh'])}"
            )
            name = teacher.split("/")[1]
            lines = [
                f"- {_time(r)} Họp phụ huynh, cô {name} chủ nhiệm của {child} nói",
                "  con học toán tốt nhưng cần luyện chữ viết thêm",
            ]
            question = f"cô {name} nói {child} cần luyện gì"
            distractors = [
                _bullet(r, f"{child} được điểm mười môn toán"),
                _bullet(r, f"cô {name} gửi thông báo nghỉ học"),
            ]
            language = "vi"
        else:
            city = self.unique(
                lambda: r.choice(EN_CITIES)
                + "/"
                + r.choice(["Marriott", "Hilton", "Novotel", "Hyatt", "Ibis"])
            )
            where, hotel = city.split("/")
            lines = [
                f"- {_time(r)} Booked the trip to {where} for the conference.",
                f"  Staying at the {hotel}, confirmation {r.randint(100000, 999999)}",
            ]
            question = f"which hotel am I staying at in {where}"
            distractors = [
                _bullet(r, f"{hotel} points expire this year"),
                _bullet(r, f"the conference in {where} opens registration"),
            ]
            language = "en"
        plant = Plant(day, lines, list(range(len(lines))), session=r.random() < 0.3)
        return language, question, plant, [Plant(self.day(), [d]) for d in distractors]

    # --- when: the answer is the day of the note ----------------------------------

    def when(self) -> tuple[str, str, Plant, list[Plant]]:
        r = self.r
        choice = r.randrange(6)
        day = self.day()
        if choice == 0:
            shop = self.unique(
                lambda: r.choice(["Honda Phát Tiến", "Yamaha Town", "Tiệm Tư Lùn", "Sửa xe Hòa"])
                + f" {r.randint(1, 9)}"
            )
            answer = _bullet(r, f"Thay nhớt và lốp sau xe máy ở {shop}")
            question = f"lần cuối thay nhớt xe máy ở {shop} là khi nào?"
            distractors = [
                _bullet(r, "xe máy hết xăng giữa đường"),
                _bullet(r, f"đi ngang {shop.rsplit(' ', 1)[0]} thấy đông khách"),
            ]
            language = "vi"
        elif choice == 1:
            company = self.unique(
                lambda: r.choice(COMPANIES) + f" {r.choice(['car', 'home', 'travel', 'health'])}"
            )
            name, what = company.rsplit(" ", 1)
            answer = _bullet(r, f"Renewed the {what} insurance with {name}, paid the full year")
            question = f"when did I renew the {what} insurance with {name}?"
            distractors = [
                _bullet(r, f"{name} called about a new {what} plan"),
                _bullet(r, "insurance paperwork is in the blue folder"),
            ]
            language = "en"
        elif choice == 2:
            clinic = self.unique(
                lambda: r.choice(CLINICS)
                + "/"
                + r.choice(["flu shot", "tetanus booster", "hepatitis vaccine", "eye test"])
            )
            place, shot = clinic.split("/")
            answer = _bullet(r, f"Got the {shot} at {place}, arm a bit sore")
            question = f"when did I get the {shot}"
            distractors = [
                _bullet(r, f"{place} sent a reminder"),
                _bullet(r, f"read an article about the {shot.split()[0]}"),
            ]
            language = "en"
        elif choice == 3:
            place = self.unique(lambda: r.choice(ZH_PLACES) + "/" + r.choice(ZH_PEOPLE))
            city, person = place.split("/")
            answer = _bullet(r, f"去{city}看望了{person}，一起吃了火锅")
            question = f"什么时候 去 {city} 看 {person}"
            distractors = [
                _bullet(r, f"{person}说下个月来{r.choice(ZH_PLACES)}"),
                _bullet(r, f"想去{city}旅游"),
            ]
            language = "zh"
        elif choice == 4:
            full, short = r.choice(VI_PEOPLE)
            thing = self.unique(
                lambda: f"{short}/"
                + r.choice(["tiền nhà", "tiền học", "tiền vé máy bay", "tiền cọc"])
            )
            what = thing.split("/")[1]
            answer = _bullet(r, f"Đã chuyển khoản {what} cho {short}, {r.randint(2, 30)} triệu")
            question = f"chuyển {what} cho {short} hôm nào"
            distractors = [
                _bullet(r, f"{short} nhắc chuyện {what}"),
                _bullet(r, "chuyển khoản tiền điện nước"),
            ]
            language = "vi"
        else:
            item = self.unique(
                lambda: r.choice(BRANDS)
                + " "
                + r.choice(["laptop", "monitor", "printer", "air purifier", "rice cooker"])
            )
            answer = _bullet(r, f"The new {item} arrived, set it up in the study")
            question = f"when did the {item} arrive"
            distractors = [
                _bullet(r, f"comparing prices of {item.split(' ', 1)[1]} models"),
                _bullet(r, f"the {item.split(' ', 1)[0]} shop closes early"),
            ]
            language = "en"
        plant = Plant(day, [answer], [0], session=r.random() < 0.3)
        return language, question, plant, [Plant(self.day(), [d]) for d in distractors]

    # --- unmarked: a person or place with marks, asked about without them ---------

    def unmarked(self) -> tuple[str, str, Plant, list[Plant]]:
        # Asked about without marks; a look-alike entry differs from the answer only in
        # words with đ/Đ, which FTS5's remove_diacritics leaves as they are (đ is a letter).
        r = self.r
        choice = r.randrange(4)
        day = self.day()
        key = self.unique(lambda: f"{choice}/{r.randrange(len(D_PEOPLE))}/{r.choice(VI_PLACES)}")
        person = D_PEOPLE[int(key.split("/")[1])]
        place = key.split("/")[2]
        twins = [_look_alike(r, person) for _ in range(LOOK_ALIKES)]
        others = [p for p in VI_PLACES if p != place]
        if choice == 0:
            answer = _bullet(r, f"{person} chuyển về {place} sống với gia đình")
            question = f"{_unmark(person)} chuyen ve dau"
            distractors = [
                _bullet(r, f"{twin} chuyển về {r.choice(others)} sống với gia đình")
                for twin in twins
            ]
        elif choice == 1:
            hotel, look_alike = self.unique_pair(D_HOTELS, place)
            answer = _bullet(
                r, f"Đặt phòng khách sạn {hotel} ở {place} cho chuyến đi tháng {r.randint(1, 12)}"
            )
            question = f"khach san {_unmark(hotel)} o {_unmark(place)}"
            distractors = [
                _bullet(r, f"Đặt phòng khách sạn {look_alike} ở {place} tháng {r.randint(1, 12)}")
                for _ in range(LOOK_ALIKES)
            ]
        elif choice == 2:
            street, other_street = r.sample(VI_STREETS, 2)
            answer = _bullet(r, f"Nhà mới của {person} ở số {r.randint(10, 299)} {street}")
            question = f"nha moi cua {_unmark(person)} o dau"
            distractors = [
                _bullet(r, f"Nhà mới của {twin} ở số {r.randint(10, 299)} {other_street}")
                for twin in twins
            ]
        else:
            jobs = [
                "kỹ sư phần mềm",
                "bác sĩ nha khoa",
                "giáo viên tiếng Anh",
                "kế toán trưởng",
                "kiến trúc sư",
            ]
            job, other_job = r.sample(jobs, 2)
            answer = _bullet(r, f"{person} giờ làm {job} ở {place}")
            question = f"{_unmark(person)} lam nghe gi"
            distractors = [
                _bullet(r, f"{twin} giờ làm {other_job} ở {r.choice(others)}") for twin in twins
            ]
        plant = Plant(day, [answer], [0], session=r.random() < 0.3)
        return "vi-unmarked", question, plant, [Plant(self.day(), [d]) for d in distractors]

    # --- changed: the fact changed; the newer line is the answer -------------------

    def changed(self) -> tuple[str, str, Plant, list[Plant]]:
        r = self.r
        choice = r.randrange(5)
        new_day = self.day(200)
        old_day = self.day(0, new_day - 60)
        if choice == 0:
            full, short = r.choice(VI_PEOPLE)
            old = self.unique(lambda: f"{r.choice(CODE_WORDS)}-{r.randint(10, 99)}")
            new = self.unique(lambda: f"{r.choice(CODE_WORDS)}-{r.randint(10, 99)}")
            where = self.unique(
                lambda: r.choice(["văn phòng", "nhà bố mẹ", "nhà riêng", "quán"]) + f" {short}"
            )
            old_line = _bullet(r, f"Mật khẩu wifi {where} là {old}")
            new_line = _bullet(r, f"Đã đổi mật khẩu wifi {where} thành {new}")
            question = f"mật khẩu wifi {where} là gì"
            language = "vi"
        elif choice == 1:
            person = r.choice(EN_PEOPLE)
            first, second = r.sample(EN_CITIES, 2)
            self.unique(lambda: f"live/{person}/{second}")
            old_line = _bullet(r, f"{person} moved to {first} for the new job")
            new_line = _bullet(r, f"{person} moved again, now lives in {second}")
            question = f"where does {person} live now?"
            language = "en"
        elif choice == 2:
            doctor = self.unique(
                lambda: r.choice(["dentist", "eye doctor", "physio", "dermatologist"])
                + f" {r.choice(['Dr. Lan', 'Dr. Webb', 'Dr. Kim', 'Dr. Osei', 'Dr. Ruiz'])}"
            )
            d1, d2 = r.sample(range(1, 28), 2)
            m1, m2 = r.sample(MONTHS_EN, 2)
            old_line = _bullet(r, f"Appointment with the {doctor} booked for {m1} {d1}")
            new_line = _bullet(r, f"The {doctor} moved my appointment to {m2} {d2}")
            question = f"when is my appointment with the {doctor}"
            language = "en"
        elif choice == 3:
            activity = self.unique(
                lambda: r.choice(["tập gym", "học bơi", "học đàn", "đá bóng", "học vẽ"])
                + f" của {r.choice(['mình', 'bé Na', 'bé Bin', 'vợ'])}"
            )
            old_days, new_days = r.sample(
                ["thứ hai, tư, sáu", "thứ ba, năm, bảy", "cuối tuần", "tối thứ tư"], 2
            )
            old_line = _bullet(r, f"Lịch {activity} là {old_days}")
            new_line = _bullet(r, f"Đổi lịch {activity} sang {new_days}")
            question = f"lịch {activity} là ngày nào"
            language = "vi"
        else:
            person = self.unique(
                lambda: r.choice(ZH_PEOPLE) + "/" + r.choice(["手机号", "地址", "邮箱"])
            )
            who, what = person.split("/")
            old_line = _bullet(r, f"{who}的{what}是{r.randint(100000, 999999)}")
            new_line = _bullet(r, f"{who}换了新的{what}：{r.randint(100000, 999999)}")
            question = f"{who} {what}"
            language = "zh"
        answer = Plant(new_day, [new_line], [0], session=r.random() < 0.3)
        return language, question, answer, [Plant(old_day, [old_line])]

    # --- paraphrase: the question uses other words than the note ---------------------

    def paraphrase(self) -> tuple[str, str, Plant, list[Plant]]:
        r = self.r
        choice = r.randrange(6)
        day = self.day()
        if choice == 0:
            child = r.choice(["bé Na", "bé Bin"])
            gift = self.unique(
                lambda: f"{child}/"
                + r.choice(
                    ["cây đàn piano điện", "chiếc xe đạp", "bộ lego", "cái máy ảnh", "con gấu bông"]
                )
                + f" {r.choice(BRANDS)}"
            )
            what = gift.split("/")[1]
            answer = _bullet(r, f"Mua {what} cho {child} nhân dịp sinh nhật")
            question = f"tặng quà gì cho {child} hôm sinh nhật"
            distractors = [_bullet(r, f"sinh nhật {r.choice(VI_PEOPLE)[1]} ở nhà hàng")]
            language = "vi"
        elif choice == 1:
            city = self.unique(lambda: r.choice(EN_CITIES) + "/" + r.choice(AIRLINES))
            where, airline = city.split("/")
            answer = _bullet(
                r, f"Booked flights to {where} for the {r.choice(MONTHS_EN)} holiday on {airline}"
            )
            question = f"which carrier are we flying with on the {where} trip"
            distractors = [_bullet(r, f"{where} weather looks rainy next week")]
            language = "en"
        elif choice == 2:
            person = self.unique(lambda: r.choice(EN_PEOPLE) + "/" + r.choice(BOOKS))
            who, book = person.split("/")
            answer = _bullet(r, f"{who} recommended {book}, says it changed how they think")
            question = f"what novel did {who} suggest I read"
            distractors = [_bullet(r, f"lunch with {who}, talked about work")]
            language = "en"
        elif choice == 3:
            company = self.unique(
                lambda: r.choice(
                    ["Cứu hộ 24h", "Cứu hộ Sài Gòn", "Garage Minh Phát", "Garage Thành Công"]
                )
                + f" {r.randint(1, 9)}"
            )
            answer = _bullet(r, f"Xe hơi chết máy vì hỏng bình ắc quy, gọi {company} tới kéo")
            question = "ô tô không nổ được hôm đó ai tới giúp"
            distractors = [_bullet(r, "đi rửa xe hơi cuối tuần")]
            language = "vi"
        elif choice == 4:
            person = self.unique(
                lambda: r.choice(EN_PEOPLE) + "/" + r.choice(["a baby girl", "a baby boy", "twins"])
            )
            who, baby = person.split("/")
            answer = _bullet(r, f"{who} and her partner welcomed {baby} this weekend")
            question = f"did {who} have her child yet"
            distractors = [_bullet(r, f"{who} is back in the office on Monday")]
            language = "en"
        else:
            full, short = r.choice(VI_PEOPLE)
            pet = self.unique(lambda: f"{short}/" + r.choice(["Mực", "Vàng", "Bông", "Miu", "Lu"]))
            name = pet.split("/")[1]
            answer = _bullet(r, f"{short} mới nhận nuôi một con chó tên {name}")
            question = f"thú cưng của {short} gọi là gì"
            distractors = [_bullet(r, f"{short} bị dị ứng lông mèo")]
            language = "vi"
        plant = Plant(day, [answer], [0], session=r.random() < 0.3)
        return language, question, plant, [Plant(self.day(), [d]) for d in distractors]


def _look_alike(r: random.Random, name: str) -> str:
    return " ".join(r.choice(SWAPS) if "đ" in word.lower() else word for word in name.split())


_UNMARK = str.maketrans({"đ": "d", "Đ": "D"})


def _unmark(text: str) -> str:
    import unicodedata

    decomposed = unicodedata.normalize("NFD", text.translate(_UNMARK))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower()


def build(seed: int = 16) -> Corpus:
    """The whole set: notes, hand-kept files, MEMORY.md and the questions."""
    r = random.Random(seed)
    maker = _Maker(r)
    days = [START + dt.timedelta(days=index) for index in range(DAYS)]
    sessions = {
        index: f"{r.randint(8, 22):02d}{r.choice(['00', '15', '30', '45'])}"
        for index in range(DAYS)
        if r.random() < SESSION_SHARE
    }

    # Filler first: every note gets its everyday lines.
    plain: dict[int, list[list[str]]] = {
        index: [[_bullet(r, _filler(r))] for _ in range(r.randint(5, 14))] for index in range(DAYS)
    }
    session: dict[int, list[list[str]]] = {
        index: [[_bullet(r, _filler(r))] for _ in range(r.randint(3, 8))] for index in sessions
    }
    # Some filler lines become a paragraph, or a bullet continued on the next line.
    for entries in list(plain.values()) + list(session.values()):
        for entry in entries:
            if r.random() < 0.08:
                entry.append("  " + _filler(r))

    questions: list[Question] = []
    pending: list[tuple[Question, Plant, int]] = []  # (question, plant, where it went)
    for kind in KINDS:
        for _ in range(QUESTIONS_PER_KIND):
            language, text, answer, distractors = getattr(maker, kind)()
            question = Question(kind, language, text)
            questions.append(question)
            for plant in [answer, *distractors]:
                if plant.session and plant.day not in sessions:
                    plant.session = False
                target = (session if plant.session else plain)[plant.day]
                position = r.randint(0, len(target))
                target.insert(position, plant.lines)
                if plant is answer:
                    pending.append((question, plant, id(plant.lines)))

    files: dict[str, str] = {}
    mtimes: dict[str, float] = {}
    where: dict[int, tuple[str, int]] = {}  # id(lines) → (path, first line, 1-based)
    for index, day in enumerate(days):
        for name, entries in [(day.isoformat(), plain[index])] + (
            [(f"{day.isoformat()}-{sessions[index]}", session[index])] if index in sessions else []
        ):
            lines = [f"# {day.isoformat()}", ""]
            for entry in entries:
                if not entry[0].startswith("- "):
                    # A paragraph stands between blank lines.
                    if lines[-1] != "":
                        lines.append("")
                    where[id(entry)] = (f"memory/{name}.md", len(lines) + 1)
                    lines.extend(entry)
                    lines.append("")
                    continue
                where[id(entry)] = (f"memory/{name}.md", len(lines) + 1)
                lines.extend(entry)
            path = f"memory/{name}.md"
            files[path] = "\n".join(lines).rstrip("\n") + "\n"
            hour = int(sessions[index][:2]) if name != day.isoformat() else 21
            mtimes[path] = dt.datetime(day.year, day.month, day.day, hour, 30).timestamp()

    for question, plant, key in pending:
        path, first = where[key]
        question.answers = [(path, first + offset) for offset in plant.answer]

    files["MEMORY.md"] = (
        "# Memory\n\n## Owner\n\n- Sống ở Sài Gòn, làm việc ở quận 1\n- Thích câu trả lời ngắn\n"
        "\n## Setup\n\n- Notes are in memory/, one per day\n- Backups run every Sunday night\n"
    )
    mtimes["MEMORY.md"] = dt.datetime(2025, 12, 31, 22, 0).timestamp()
    return Corpus(files, mtimes, questions)


if __name__ == "__main__":
    corpus = build()
    print(
        len(corpus.files),
        "files,",
        sum(len(t) for t in corpus.files.values()),
        "chars,",
        len(corpus.questions),
        "questions",
    )
    for question in corpus.questions[::37]:
        print(question.kind, question.language, question.text, question.answers)
        for path, line in question.answers:
            print("   ", corpus.files[path].split("\n")[line - 1])
