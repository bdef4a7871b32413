"""The Settings tab (SPEC §15): schedule, autonomous, rename, a new agent, a token — through
the API's own serializers and operations."""

from django_q.models import Schedule

from memory.models import Agent, ApiToken


def html_of(response) -> str:
    return response.content.decode()


def test_it_switches_on_the_nightly_consolidation_from_a_preset(pages, master):
    response = pages.post(
        "/manage/memory/settings/master/",
        {"name": "Master", "preset": "0 3 * * *", "cron": "", "save": "1"},
    )
    assert response.status_code == 302
    master.refresh_from_db()
    assert master.memory_consolidate == "0 3 * * *" and not master.autonomous
    schedule = Schedule.objects.get(name="memory-consolidate:master")
    assert schedule.cron == "0 3 * * *"
    html = html_of(pages.get("/manage/memory/settings/master/"))
    assert "At 03:00" in html and "Next run:" in html


def test_a_bad_cron_stays_in_the_field_with_its_error_and_nothing_changes(pages, master):
    response = pages.post(
        "/manage/memory/settings/master/",
        {"name": "Chủ", "preset": "custom", "cron": "every night", "autonomous": "on"},
    )
    assert response.status_code == 422
    html = html_of(response)
    assert 'value="every night"' in html and 'value="Chủ"' in html
    assert 'id="cron-error">Invalid cron expression' in html
    master.refresh_from_db()
    assert master.memory_consolidate == "" and master.name == "Master" and not master.autonomous


def test_preview_writes_nothing_and_says_when_it_would_run(pages, master):
    response = pages.post(
        "/manage/memory/settings/master/",
        {"name": "Master", "preset": "custom", "cron": "30 2 * * 1-5", "preview": "1"},
    )
    assert response.status_code == 200
    html = html_of(response)
    assert "Preview (not saved yet)" in html and "02:30" in html and "Next runs:" in html
    master.refresh_from_db()
    assert master.memory_consolidate == ""


def test_it_renames_and_makes_autonomous(pages, master):
    pages.post(
        "/manage/memory/settings/master/",
        {"name": "Trợ lý chính", "autonomous": "on", "preset": "", "save": "1"},
    )
    master.refresh_from_db()
    assert master.name == "Trợ lý chính" and master.autonomous


def test_it_creates_an_agent_with_its_directory_and_refuses_a_taken_id(pages, master, workspace):
    response = pages.post(
        "/manage/memory/settings/new-agent/", {"new-id": "reader", "new-name": "Reader"}
    )
    assert response["Location"] == "/manage/memory/settings/reader/"
    assert Agent.objects.get(pk="reader").name == "Reader"
    assert (workspace / "agents/reader/MEMORY.md").exists()
    again = pages.post(
        "/manage/memory/settings/new-agent/", {"new-id": "reader", "new-name": "Other"}
    )
    assert again.status_code == 422
    assert "Agent &#x27;reader&#x27; exists." in html_of(again)
    bad = pages.post("/manage/memory/settings/new-agent/", {"new-id": "Bad Id", "new-name": "x"})
    assert bad.status_code == 422 and 'value="Bad Id"' in html_of(bad)


def test_a_token_is_shown_once_with_the_mcp_snippet(pages, master):
    html = html_of(pages.post("/manage/memory/settings/master/token/"))
    token = ApiToken.objects.get(agent=master)
    key = html.split('id="new-token">', 1)[1].split("<", 1)[0]
    assert len(key) == 48 and token.key_hash != key
    assert f'"Authorization": "Bearer {key}"' in html
    assert '"url": "http://testserver/mcp"' in html
    assert key not in html_of(pages.get("/manage/memory/settings/master/"))


def test_the_model_is_named_or_its_absence_explained(pages, master, settings):
    html = html_of(pages.get("/manage/memory/settings/master/"))
    assert "No model is configured" in html and "MEMORY_LLM_MODEL" in html
    settings.MEMORY_LLM_MODEL = "gpt-4o-mini"
    settings.MEMORY_LLM_BASE_URL = "http://127.0.0.1:9/v1"
    html = html_of(pages.get("/manage/memory/settings/master/"))
    assert "<strong>gpt-4o-mini</strong>" in html


def test_an_empty_workspace_teaches_the_first_steps(pages, master):
    html = html_of(pages.get("/manage/memory/"))
    assert "Getting started" in html
    assert "# About me" in html  # the USER.md template
    assert 'href="/manage/memory/settings/master/#connect"' in html
    assert 'href="/manage/memory/settings/master/#schedule"' in html


def test_error_pages_are_in_the_layout_and_in_vietnamese(pages, master):
    response = pages.get("/manage/memory/facts/nope/", HTTP_ACCEPT_LANGUAGE="vi")
    assert response.status_code == 404
    html = html_of(response)
    assert "Không tìm thấy trang" in html and 'class="skip-link"' in html
