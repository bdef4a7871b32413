"""The pages speak Vietnamese and English: from the browser's language or the switch."""

from django.test import Client


def test_it_answers_in_vietnamese_when_the_browser_asks(pages, master):
    html = pages.get("/manage/memory/", HTTP_ACCEPT_LANGUAGE="vi").content.decode()
    assert '<html lang="vi">' in html
    assert "Bộ nhớ" in html and "Lưu USER.md" in html and "Đề xuất" in html
    english = pages.get("/manage/memory/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Save USER.md" in english and "Lưu USER.md" not in english


def test_the_agent_screen_heading_is_translated(pages, master):
    html = pages.get("/manage/memory/agents/master/", HTTP_ACCEPT_LANGUAGE="vi").content.decode()
    assert "Được đọc ngay trước tin nhắn đầu tiên của một cuộc trò chuyện mới" in html


def test_the_switch_sets_the_language(pages, master):
    response = pages.post("/i18n/setlang/", {"language": "vi", "next": "/manage/memory/"})
    assert response.status_code == 302 and response["Location"] == "/manage/memory/"
    assert "Lưu USER.md" in pages.get("/manage/memory/").content.decode()


def test_the_sign_in_page_is_translated(workspace, db):
    html = Client().get("/manage/memory/login/", HTTP_ACCEPT_LANGUAGE="vi").content.decode()
    assert "Đăng nhập" in html and "Mật khẩu" in html


def test_the_language_switch_and_sign_out_stand_beside_the_tabs_and_in_the_narrow_menu(
    pages, master
):
    html = pages.get("/manage/memory/search/?q=x", HTTP_ACCEPT_LANGUAGE="vi").content.decode()
    wide = html.split('<div class="top-right top-right-wide">', 1)[1].split("</div>", 1)[0]
    menu = html.split('<div class="top-right top-right-menu">', 1)[1].split("</div>", 1)[0]
    assert wide == menu
    assert 'action="/i18n/setlang/"' in wide and 'value="/manage/memory/search/?q=x"' in wide
    assert '<option value="vi" lang="vi" selected>' in wide
    assert "Đăng xuất" in wide and 'name="csrfmiddlewaretoken"' in wide
    assert html.index("top-right-menu") > html.index('<details class="top-menu">')
