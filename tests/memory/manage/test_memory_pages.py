"""The Memory tab: USER.md, facts, MEMORY.md, notes, search (SPEC §15)."""

import re

from django.contrib.auth import get_user_model
from django.test import Client

from memory import facts, notes, workspace


def text_of(response) -> str:
    return response.content.decode()


def test_it_sends_anonymous_visitors_to_sign_in(workspace, db):
    response = Client().get("/manage/memory/")
    assert response.status_code == 302
    assert response["Location"].startswith("/manage/memory/login/?next=/manage/memory/")


def test_it_sends_a_non_staff_user_to_sign_in(workspace, db):
    bob = get_user_model().objects.create_user("bob", password="pw-bob-123456")
    client = Client()
    client.force_login(bob)
    assert client.get("/manage/memory/").status_code == 302


def test_it_signs_in_with_the_login_page(alice, master):
    client = Client()
    page = client.get("/manage/memory/login/")
    assert page.status_code == 200
    assert 'name="csrfmiddlewaretoken"' in text_of(page)
    response = client.post(
        "/manage/memory/login/",
        {"username": "alice", "password": "pw-alice-123", "next": "/manage/memory/"},
    )
    assert response.status_code == 302
    assert response["Location"] == "/manage/memory/"
    assert client.get("/manage/memory/").status_code == 200


def test_it_shows_user_md_with_its_count_and_saves_it(pages, master, workspace):
    facts.write_user("Tôi là Lan.\n")
    response = pages.get("/manage/memory/")
    html = text_of(response)
    assert "Tôi là Lan." in html
    assert '<span class="count">12</span> / 4000' in html
    assert "Content-Security-Policy" in response.headers

    base = workspace.joinpath("users/owner/USER.md").read_text()
    from memory.workspace import hash_text

    response = pages.post(
        "/manage/memory/user/",
        {"body": "Tôi là Lan.\r\nThích trả lời ngắn.\r\n", "base_hash": hash_text(base)},
    )
    assert response.status_code == 302
    assert (workspace / "users/owner/USER.md").read_text() == "Tôi là Lan.\nThích trả lời ngắn.\n"


def test_it_warns_past_the_user_cap_and_still_stores_it_whole(pages, master, workspace):
    long = "x" * 4001
    pages.post("/manage/memory/user/", {"body": long, "base_hash": ""})
    assert (workspace / "users/owner/USER.md").read_text() == long
    html = text_of(pages.get("/manage/memory/"))
    assert '<p class="counter over"' in html
    assert '<span class="count">4001</span> / 4000' in html


def test_it_refuses_a_user_md_edit_made_on_a_stale_copy(pages, master, workspace):
    facts.write_user("v1\n")
    stale = workspace_hash("users/owner/USER.md")
    facts.write_user("v2 from another tab\n")
    response = pages.post("/manage/memory/user/", {"body": "my edit\n", "base_hash": stale})
    assert response.status_code == 409
    html = text_of(response)
    assert "Conflict: users/owner/USER.md changed since you opened it." in html
    assert "my edit" in html  # the owner's text is not lost
    assert (workspace / "users/owner/USER.md").read_text() == "v2 from another tab\n"


def workspace_hash(rel: str) -> str:
    return workspace.file_hash(rel)


def test_it_adds_edits_and_forgets_a_fact(pages, master, workspace):
    response = pages.post(
        "/manage/memory/facts/new/",
        {
            "name": "coffee",
            "type": "preference",
            "description": "Uống cà phê đen",
            "body": "Không đường.",
        },
    )
    assert response.status_code == 302
    text = (workspace / "users/owner/facts/coffee.md").read_text()
    assert "description: Uống cà phê đen" in text
    assert "written_by: owner" in text and "source: web" in text
    assert "coffee" in (workspace / "users/owner/facts/INDEX.md").read_text()

    html = text_of(pages.get("/manage/memory/"))
    assert "Uống cà phê đen" in html

    response = pages.post(
        "/manage/memory/facts/coffee/",
        {"type": "preference", "description": "Cà phê sữa đá", "body": "Ít đá."},
    )
    assert response.status_code == 302
    assert facts.get_fact("coffee").description == "Cà phê sữa đá"
    assert "Ít đá." in text_of(pages.get("/manage/memory/facts/coffee/"))

    response = pages.post("/manage/memory/facts/coffee/forget/")
    assert response.status_code == 302
    assert not (workspace / "users/owner/facts/coffee.md").exists()
    assert "Fact coffee forgotten." in text_of(pages.get("/manage/memory/"))


def test_a_bad_fact_name_keeps_the_form_as_typed_with_the_error_at_the_name(
    pages, master, workspace
):
    response = pages.post(
        "/manage/memory/facts/new/",
        {
            "name": "Bad Name",
            "type": "preference",
            "description": "Uống trà xanh",
            "body": "Mỗi sáng, không đường.",
        },
    )
    assert response.status_code == 422
    html = text_of(response)
    # The error stands next to the name field, and nothing typed is thrown away.
    name_field = html[html.index('id="id_name"') - 600 : html.index('id="id_name"') + 400]
    assert "Invalid fact name &#x27;Bad Name&#x27;" in name_field
    assert 'value="Bad Name"' in html and 'value="Uống trà xanh"' in html
    assert "Mỗi sáng, không đường.</textarea>" in html
    assert '<details class="box" id="add-fact" open>' in html
    assert not (workspace / "users/owner/facts/Bad Name.md").exists()


def test_a_fact_name_that_exists_is_a_conflict_at_the_name_field(pages, master, workspace):
    form = {"name": "tea", "type": "preference", "description": "d1", "body": ""}
    assert pages.post("/manage/memory/facts/new/", form).status_code == 302
    again = pages.post("/manage/memory/facts/new/", {**form, "description": "second"})
    assert again.status_code == 409
    html = text_of(again)
    assert "A fact named tea exists already." in html and 'value="second"' in html
    assert "description: d1" in (workspace / "users/owner/facts/tea.md").read_text()


def test_it_labels_stale_facts_and_filters_them(pages, master, workspace):
    facts.save_fact(
        "old-goal",
        description="Chạy marathon",
        type="project",
        body="",
        written_by="owner",
        source="web",
    )
    path = workspace / "users/owner/facts/old-goal.md"
    path.write_text(re.sub(r"updated: .*", "updated: '2020-01-01'", path.read_text()))
    facts.save_fact(
        "tea", description="Trà xanh", type="preference", body="", written_by="owner", source="web"
    )
    html = text_of(pages.get("/manage/memory/"))
    assert '<span class="label stale-label">stale</span>' in html
    filtered = text_of(pages.get("/manage/memory/?fq=tra&type="))
    assert "Trà xanh" in filtered and "Chạy marathon" not in filtered
    by_type = text_of(pages.get("/manage/memory/?fq=&type=project"))
    assert "Chạy marathon" in by_type and "Trà xanh" not in by_type


def test_it_edits_memory_md_with_its_count(pages, master, workspace):
    notes.write_memory(master, "- Lan thích sách (2026-11-01)\n")
    response = pages.get("/manage/memory/agents/master/memory/")
    html = text_of(response)
    assert "- Lan thích sách (2026-11-01)" in html
    assert "/ 24000" in html
    base = workspace_hash("MEMORY.md")
    response = pages.post(
        "/manage/memory/agents/master/memory/", {"body": "- new truth\n", "base_hash": base}
    )
    assert response.status_code == 302
    assert (workspace / "MEMORY.md").read_text() == "- new truth\n"


def test_it_refuses_a_memory_md_edit_when_an_agent_wrote_meanwhile(pages, master, workspace):
    notes.write_memory(master, "- a\n")
    base = workspace_hash("MEMORY.md")
    notes.append_memory_lines(master, ["b from the agent"])
    response = pages.post(
        "/manage/memory/agents/master/memory/", {"body": "- mine\n", "base_hash": base}
    )
    assert response.status_code == 409
    assert "Conflict: MEMORY.md changed since you opened it." in text_of(response)
    assert (workspace / "MEMORY.md").read_text() == "- a\nb from the agent\n"


def test_it_lists_notes_newest_first_and_edits_one(pages, helper_agent, workspace):
    notes.write_note(helper_agent, "2026-11-28", "# 2026-11-28\n\n- cũ\n")
    notes.write_note(helper_agent, "2026-11-30", "# 2026-11-30\n\n- mới\n")
    html = text_of(pages.get("/manage/memory/agents/helper/memory/"))
    assert html.index("2026-11-30.md") < html.index("2026-11-28.md")

    note = pages.get("/manage/memory/agents/helper/notes/2026-11-30/")
    assert "<li>mới</li>" in text_of(note)
    response = pages.post(
        "/manage/memory/agents/helper/notes/2026-11-30/",
        {
            "body": "# 2026-11-30\n\n- sửa\n",
            "base_hash": workspace_hash("agents/helper/memory/2026-11-30.md"),
        },
    )
    assert response.status_code == 302
    assert (
        workspace / "agents/helper/memory/2026-11-30.md"
    ).read_text() == "# 2026-11-30\n\n- sửa\n"


def test_the_search_page_offers_every_agent_and_keeps_the_one_chosen(pages, master, helper_agent):
    html = text_of(pages.get("/manage/memory/search/?q=sach&agent=helper"))
    assert '<option value="">every agent</option>' in html
    assert '<option value="helper" selected>helper</option>' in html
    assert '<option value="master">master</option>' in html
    first = text_of(pages.get("/manage/memory/search/"))
    assert '<option value="helper">helper</option>' in first
    assert '<option value="master">master</option>' in first


def test_a_hits_heading_text_and_weight_are_escaped_on_the_search_page(pages, master):
    notes.write_note(
        master,
        "2026-11-28",
        '# 2026-11-28\n\n## <img src=x onerror="alert(1)">\n\n- <b>sach</b> & "doc"\n',
    )
    html = text_of(pages.get("/manage/memory/search/?q=sach&explain=1"))
    assert "<img" not in html and "<b>" not in html
    assert ' <span class="muted">## &lt;img src=x onerror=&quot;alert(1)&quot;&gt;</span>' in html
    assert "- &lt;b&gt;<mark>sach</mark>&lt;/b&gt; &amp; &quot;doc&quot;" in html
    assert '<td data-label="Weight" title="sach">' in html


def test_it_answers_404_for_a_bad_note_name_or_agent(pages, master):
    assert pages.get("/manage/memory/agents/master/notes/..%2Fsecret/").status_code == 404
    assert pages.get("/manage/memory/agents/master/notes/2026-02-30/").status_code == 404
    assert pages.get("/manage/memory/agents/nobody/memory/").status_code == 404


def test_it_searches_every_scope_and_shows_scope_path_line_text(
    pages, master, helper_agent, workspace
):
    notes.write_note(master, "2026-11-29", "# 2026-11-29\n\n- Sách đang đọc: Dế Mèn\n")
    notes.write_note(helper_agent, "2026-11-29", "# 2026-11-29\n\n- sách cần mua\n")
    html = text_of(pages.get("/manage/memory/search/?q=sach&agent="))
    # Escaped, then the matched word marked; linked to the file at its line; dated.
    assert "- <mark>Sách</mark> đang đọc: Dế Mèn" in html
    assert "- <mark>sách</mark> cần mua" in html
    assert 'href="/manage/memory/agents/master/view/memory/2026-11-29.md?q=sach#L3"' in html
    assert 'href="/manage/memory/agents/helper/view/memory/2026-11-29.md?q=sach#L3"' in html
    assert (
        "<code>memory/2026-11-29.md:3</code>" in html
        and '<td data-label="Note date">2026-11-29' in html
    )
    assert "2 results" in html
    only = text_of(pages.get("/manage/memory/search/?q=sach&agent=helper"))
    assert "cần mua" in only and "Dế Mèn" not in only


def test_the_search_page_shows_lines_date_heading_and_on_request_the_weights(
    pages, master, workspace
):
    notes.write_note(
        master,
        "2026-11-29",
        "# 2026-11-29\n\n## Sức khỏe\n\n- 08:00 đo huyết áp 120/80,\n  bác sĩ bảo ổn\n",
    )
    html = pages.get("/manage/memory/search/?q=huyet+ap+bac+si").content.decode()
    row = re.search(
        r'<tr>\s*<td data-label="Where"><span class="tag">master</span>.*?</tr>', html, re.S
    ).group(0)
    assert "<code>memory/2026-11-29.md:5–6</code>" in row  # the block's lines
    assert '<span class="muted">## Sức khỏe</span>' in row  # the heading it sits under
    assert "2026-11-29</td>" in row  # the note's date
    assert "Weight" not in html

    html = text_of(pages.get("/manage/memory/search/?q=huyet+ap+bac+si&explain=1"))
    # The heading and the block; the note's date heading is no entry (SPEC §6.1).
    assert "How each word counted, over 2 entries" in html
    # A word of four letters or more counts the words it starts (SPEC §6.1).
    assert "<td><code>huyet</code></td><td>at the start of words</td><td>1</td>" in html
    assert "<td><code>ap</code></td><td>as a whole word</td><td>1</td>" in html


def test_the_explain_box_says_when_a_word_counted_inside_longer_words(pages, master, workspace):
    # `docs` starts no word of the scope, so it counts inside `mydocs`; `sync` starts one.
    notes.write_note(master, "2026-11-29", "- 08:00 mydocs sync\n- 09:00 synced photos\n")
    html = text_of(pages.get("/manage/memory/search/?q=docs+sync&explain=1"))
    assert (
        "<td><code>docs</code></td><td>inside longer words (no word starts with it)</td>"
        "<td>1</td>" in html
    )
    assert "<td><code>sync</code></td><td>at the start of words</td><td>2</td>" in html
    assert "2 results" in text_of(pages.get("/manage/memory/search/?q=docs+sync"))


def test_it_explains_a_search_with_no_letter_or_digit_instead_of_failing(pages, master):
    response = pages.get("/manage/memory/search/?q=!!!")
    assert response.status_code == 200
    assert "no letters or digits" in text_of(response)


def test_it_keeps_the_agent_just_viewed_across_tabs(pages, master, helper_agent):
    pages.get("/manage/memory/agents/helper/memory/")
    response = pages.get("/manage/memory/scripts/")
    assert response["Location"] == "/manage/memory/scripts/helper"
    response = pages.get("/manage/memory/agent/")
    assert response["Location"] == "/manage/memory/agents/helper/"
    html = text_of(pages.get("/manage/memory/activity/"))
    assert 'href="/manage/memory/wiki/helper/"' in html
    assert 'href="/manage/memory/scripts/helper"' in html


def test_every_form_carries_a_csrf_token(pages, master):
    from django.test import Client as C

    strict = C(enforce_csrf_checks=True)
    strict.force_login(get_user_model().objects.get(username="alice"))
    assert strict.post("/manage/memory/user/", {"body": "x"}).status_code == 403
    html = text_of(pages.get("/manage/memory/"))
    assert html.count("<form") == html.count("csrfmiddlewaretoken") + html.count('method="get"')


def _base_hash(html: str) -> str:
    return re.search(r'name="base_hash" value="([^"]*)"', html).group(1)


def test_it_saves_files_that_did_not_exist_with_the_hash_the_form_carries(pages, master, workspace):
    base = _base_hash(text_of(pages.get("/manage/memory/")))
    response = pages.post("/manage/memory/user/", {"body": "new\n", "base_hash": base})
    assert response.status_code == 302
    assert (workspace / "users/owner/USER.md").read_text() == "new\n"
    base = _base_hash(text_of(pages.get("/manage/memory/agents/master/memory/")))
    response = pages.post(
        "/manage/memory/agents/master/memory/", {"body": "- x\n", "base_hash": base}
    )
    assert response.status_code == 302
    assert (workspace / "MEMORY.md").read_text() == "- x\n"


def test_it_signs_out_with_a_post(pages, master):
    response = pages.post("/manage/memory/logout/")
    assert response.status_code == 302 and response["Location"] == "/manage/memory/login/"
    assert pages.get("/manage/memory/").status_code == 302


def test_the_agent_screen_says_when_nothing_is_read_yet(pages, helper_agent):
    html = text_of(pages.get("/manage/memory/agents/helper/"))
    assert "Empty: no memory file exists yet." in html
    assert "Empty: no note today or yesterday." in html
