"""Model providers over real HTTP against the fake server (SPEC §13, §13.1)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from memory.jobs import llm
from memory.jobs.llm import AnthropicProvider, LLMError, OpenAIProvider, get_provider
from tests.fakellm import Reply


def test_it_answers_one_json_object_with_usage_and_cost(fake_llm):
    fake_llm.script(Reply(content={"memory": "x", "reasons": []}, usage=(1000, 500)))

    answer = get_provider().complete_json("sys", "user text")

    assert answer.data == {"memory": "x", "reasons": []}
    assert (answer.tokens_in, answer.tokens_out) == (1000, 500)
    # gpt-4o-mini: $0.15 in, $0.60 out per million tokens
    assert answer.cost == Decimal("0.000450")
    (request,) = fake_llm.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.body["response_format"] == {"type": "json_object"}
    assert request.body["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "user text"},
    ]


def test_it_strips_a_markdown_code_fence(fake_llm):
    fake_llm.script('```json\n{"proposals": []}\n```')

    assert get_provider().complete_json("s", "u").data == {"proposals": []}


def test_it_asks_again_without_json_mode_when_the_endpoint_refuses_it(fake_llm):
    fake_llm.script(Reply(content={"ok": True}, reject_json_mode=True))

    assert get_provider().complete_json("s", "u").data == {"ok": True}
    assert ["response_format" in r.body for r in fake_llm.requests] == [True, False]


def test_it_retries_a_500_and_then_answers(fake_llm):
    fake_llm.script(Reply(status=500), Reply(status=429), {"ok": 1})

    assert get_provider().complete_json("s", "u").data == {"ok": 1}
    assert len(fake_llm.requests) == 3


def test_it_gives_up_after_three_tries(fake_llm):
    fake_llm.script(Reply(status=503))

    with pytest.raises(LLMError, match="HTTP 503"):
        get_provider().complete_json("s", "u")
    assert len(fake_llm.requests) == 3


def test_it_fails_on_a_timeout_without_retrying(fake_llm, settings):
    settings.MEMORY_LLM_TIMEOUT = 0.3
    fake_llm.script(Reply(content={"late": True}, delay=1.0))

    with pytest.raises(LLMError, match="did not answer within"):
        get_provider().complete_json("s", "u")
    assert len(fake_llm.requests) == 1


def test_it_fails_on_prose_but_keeps_the_usage(fake_llm):
    fake_llm.script(Reply(content="Sure! Here is your memory.", usage=(300, 20)))

    with pytest.raises(LLMError) as caught:
        get_provider().complete_json("s", "u")
    assert "JSON" in caught.value.message
    assert (caught.value.tokens_in, caught.value.tokens_out) == (300, 20)
    assert caught.value.cost == Decimal("0.000057")


def test_it_fails_on_json_that_is_not_an_object(fake_llm):
    fake_llm.script("[1, 2, 3]")

    with pytest.raises(LLMError, match="not an object"):
        get_provider().complete_json("s", "u")


def test_it_talks_to_anthropic_messages(fake_llm, settings):
    settings.MEMORY_LLM_PROVIDER = "anthropic"
    settings.MEMORY_LLM_MODEL = "claude-haiku-4-5"
    settings.MEMORY_LLM_API_KEY = "ak-test"
    fake_llm.script(Reply(content={"pages": []}, usage=(2000, 1000)))

    provider = get_provider()
    answer = provider.complete_json("the system", "the user")

    assert isinstance(provider, AnthropicProvider)
    assert answer.data == {"pages": []}
    assert (answer.tokens_in, answer.tokens_out) == (2000, 1000)
    # claude-haiku-4-5: $1 in, $5 out per million tokens
    assert answer.cost == Decimal("0.007000")
    (request,) = fake_llm.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "ak-test"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.body["system"] == "the system"
    assert request.body["messages"] == [{"role": "user", "content": "the user"}]
    assert request.body["max_tokens"] > 0


def test_it_adds_v1_for_an_anthropic_base_without_it(fake_llm, settings):
    settings.MEMORY_LLM_PROVIDER = "anthropic"
    settings.MEMORY_LLM_BASE_URL = f"http://127.0.0.1:{fake_llm.port}"
    fake_llm.script({"ok": True})

    assert get_provider().complete_json("s", "u").data == {"ok": True}
    assert fake_llm.requests[0].path == "/v1/messages"


def test_it_has_no_provider_without_a_model_or_an_openai_base_url(settings):
    settings.MEMORY_LLM_PROVIDER = "openai"
    settings.MEMORY_LLM_MODEL = ""
    settings.MEMORY_LLM_BASE_URL = "http://127.0.0.1:9/v1"
    assert get_provider() is None
    settings.MEMORY_LLM_MODEL = "m"
    settings.MEMORY_LLM_BASE_URL = ""
    assert get_provider() is None
    settings.MEMORY_LLM_BASE_URL = "http://127.0.0.1:9/v1"
    assert isinstance(get_provider(), OpenAIProvider)


def test_it_counts_an_unpriced_model_as_free(fake_llm, settings):
    settings.MEMORY_LLM_MODEL = "llama3.1:8b"
    fake_llm.script({"ok": True})

    assert get_provider().complete_json("s", "u").cost == Decimal("0")


def test_a_prompt_template_refuses_a_placeholder_without_a_value(tmp_path):
    from memory.jobs.llm import render_prompt

    (tmp_path / "p.md").write_text("Today is {{today}} for {{agent}}.\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"no value for \['agent'\]"):
        render_prompt("p.md", tmp_path, today="2026-12-01")
    with pytest.raises(ValueError, match=r"not in the template \['extra'\]"):
        render_prompt("p.md", tmp_path, today="x", agent="y", extra="z")


def test_a_prompt_template_leaves_braces_in_the_values_alone(tmp_path):
    from memory.jobs.llm import render_prompt

    (tmp_path / "p.md").write_text("Notes:\n{{notes}}\nAgent: {{agent}}\n", encoding="utf-8")
    text = render_prompt("p.md", tmp_path, notes="- saw {{agent}} and {x}", agent="master")
    assert text == "Notes:\n- saw {{agent}} and {x}\nAgent: master\n"


def test_the_price_table_is_the_data_file_a_person_edits(monkeypatch, tmp_path, request):
    request.addfinalizer(llm.prices.cache_clear)  # later tests read the real table again
    assert llm.PRICES_FILE.name == "prices.toml"
    assert llm.prices()["gpt-4o-mini"] == (Decimal("0.15"), Decimal("0.60"))
    assert llm.price("gpt-4o-mini", 900, 64) == Decimal("0.000173")

    edited = tmp_path / "prices.toml"
    monkeypatch.setattr(llm, "PRICES_FILE", edited)
    for text in ('"m" = { input = 1.0 }\n', '"m" = { input = -1.0, output = 2.0 }\n'):
        edited.write_text(text, encoding="utf-8")
        llm.prices.cache_clear()
        with pytest.raises(ValueError, match=r"prices.toml: m needs an `input` and an `output`"):
            llm.prices()
    edited.write_text('"m" = { input = 1, output = 2.5 }\n', encoding="utf-8")
    llm.prices.cache_clear()
    assert llm.price("m", 1_000_000, 2_000_000) == Decimal("6.000000")
