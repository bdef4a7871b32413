"""Sign-in throttling against the server as `make run` starts it (bin/serve: uvicorn),
attacked over real HTTP from loopback (SPEC §17). uvicorn trusts `X-Forwarded-For` from
127.0.0.1 unless told not to, so changing the header on each try reset the count: 30 wrong
passwords answered 200 and then the right one signed in."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.ops.server import Deployment


@pytest.fixture
def served(tmp_path):
    deployment = Deployment(tmp_path, web_workers=1, q_workers=1)
    deployment.manage(
        "shell",
        "-c",
        "from django.contrib.auth import get_user_model; "
        "u = get_user_model().objects.filter(is_superuser=True).first(); "
        "u.set_password('pw-owner-123'); u.save(); print(u.username)",
    )
    yield deployment
    deployment.stop()


def _sign_in(client: httpx.Client, username: str, password: str, forwarded: str) -> int:
    page = client.get("/manage/memory/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    return client.post(
        "/manage/memory/login/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": token},
        headers={"X-Forwarded-For": forwarded, "Referer": f"{client.base_url}/"},
    ).status_code


def test_a_new_x_forwarded_for_on_each_try_is_still_one_client(served):
    username = served.manage(
        "shell", "-c", "from django.contrib.auth import get_user_model; "
        "print(get_user_model().objects.filter(is_superuser=True).first().username)",
    ).strip()  # fmt: skip
    with httpx.Client(base_url=served.url, timeout=30) as client:
        answers = [_sign_in(client, username, "wrong", f"198.51.100.{n}") for n in range(30)]
        assert answers[:4] == [200] * 4, answers
        assert set(answers[4:]) == {429}, answers
        assert _sign_in(client, username, "pw-owner-123", "198.51.100.250") == 429
