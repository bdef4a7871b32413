"""The answer constrained to the §13.1 schemas, in the first form the endpoint accepts, and
an answer cut at the token limit treated as a failure (SPEC §13), against the fake model
over real HTTP. The same path against a real llama.cpp server: tests/model."""

from __future__ import annotations

from decimal import Decimal

import pytest

from memory import workspace
from memory.jobs.hygiene import MAX_PROPOSALS
from memory.jobs.llm import LLMError, get_provider, load_prompt, load_schema
from memory.jobs.nightly import consolidate_agent
from memory.models import Run
from proposals.models import Proposal
from tests.fakellm import Reply, format_form
from tests.memory.jobs.conftest import day, rewrite_answer, write_memory, write_note
from wiki.compile import PROMPTS_DIR as WIKI_PROMPTS

OLD = "# Memory\n\n- Owner lives in Hanoi\n"
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


@pytest.fixture
def no_compile(monkeypatch):
    monkeypatch.setattr("memory.jobs.nightly._follow_ups", {})


def test_each_step_sends_its_schema_file_as_openai_json_schema(master, fake_llm):
    write_memory(master, OLD)
    write_note(master, f"{day(0)}.md", "- moved to Da Nang\n")
    from memory import facts

    facts.save_fact(
        "home",
        description="lives in Hanoi",
        type="profile",
        body="Hanoi",
        written_by="master",
        source="chat",
    )
    fake_llm.script(rewrite_answer(OLD + "- Moved\n"), {"proposals": []}, {"pages": []})

    run = consolidate_agent(master, trigger="test")

    assert run.status == "succeeded", run.summary
    sent = [r.body["response_format"] for r in fake_llm.chat_requests()]
    assert sent == [
        {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
        for schema in (
            load_schema("consolidate_schema.json"),
            load_schema("hygiene_schema.json"),
            load_schema("compile_schema.json", WIKI_PROMPTS),
        )
    ]
    assert "max_tokens" not in fake_llm.chat_requests()[0].body  # no window: the server's


def test_the_schema_files_are_the_section_13_1_shapes():
    rewrite = load_schema("consolidate_schema.json")
    assert rewrite["required"] == ["memory", "reasons"]
    reason = rewrite["properties"]["reasons"]["items"]
    assert reason["properties"]["action"]["enum"] == ["keep", "fix", "drop", "merge", "add"]
    review = load_schema("hygiene_schema.json")["properties"]["proposals"]
    # SPEC §9's "at most 10" is the prompt's and the code's (the rest are ignored and named,
    # tests/memory/jobs/test_hygiene.py), not the schema's: an eleventh item does not refuse it all.
    assert "maxItems" not in review and MAX_PROPOSALS == 10
    assert "Propose at most 10 changes" in load_prompt("hygiene_system.md")
    assert review["items"]["required"] == ["name", "action", "why"]
    assert review["items"]["properties"]["action"]["enum"] == ["forget", "update"]
    page = load_schema("compile_schema.json", WIKI_PROMPTS)["properties"]["pages"]["items"]
    assert page["properties"]["kind"]["enum"] == ["entity", "concept", "synthesis"]
    assert set(page["required"]) == {"title", "kind", "sources", "questions", "status", "body"}


def test_a_server_that_refuses_json_schema_with_a_500_gets_the_schema_as_json_object(fake_llm):
    """llama-cpp-python answers an unknown response_format type with a 500 naming it: not
    retried as a server error, but asked again in its own form — and remembered."""
    fake_llm.refuse_formats = {"json_schema"}
    fake_llm.refuse_status = 500
    fake_llm.script({"ok": True})

    assert get_provider().complete_json("s", "u", schema=SCHEMA).data == {"ok": True}
    assert get_provider().complete_json("s", "u", schema=SCHEMA).data == {"ok": True}

    forms = [format_form(r.body) for r in fake_llm.chat_requests()]
    assert forms == ["json_schema", "json_object_schema", "json_object_schema"]
    assert fake_llm.chat_requests()[1].body["response_format"] == {
        "type": "json_object",
        "schema": SCHEMA,
    }


def test_it_walks_down_to_no_response_format_on_422s(fake_llm):
    fake_llm.refuse_formats = {"json_schema", "json_object_schema", "json_object"}
    fake_llm.refuse_status = 422
    fake_llm.script({"ok": True})

    assert get_provider().complete_json("s", "u", schema=SCHEMA).data == {"ok": True}

    forms = [format_form(r.body) for r in fake_llm.chat_requests()]
    assert forms == ["json_schema", "json_object_schema", "json_object", None]


def test_a_500_that_does_not_name_response_format_is_retried_not_downgraded(fake_llm):
    fake_llm.script(Reply(status=500), {"ok": True})

    assert get_provider().complete_json("s", "u", schema=SCHEMA).data == {"ok": True}
    assert [format_form(r.body) for r in fake_llm.chat_requests()] == ["json_schema"] * 2


def test_a_prompt_past_the_endpoints_window_is_not_asked_again(fake_llm):
    error = (
        '{"error": {"message": "This model\'s maximum context length is 2048 tokens. '
        'However, you requested 3593 tokens", "code": "context_length_exceeded"}}'
    )
    fake_llm.script(Reply(status=400, body=error))

    with pytest.raises(LLMError) as caught:
        get_provider().complete_json("s", "u", schema=SCHEMA)

    assert caught.value.message == (
        "prompt too long for model (the endpoint says: This model's maximum context "
        "length is 2048 tokens. However, you requested 3593 tokens)"
    )
    assert len(fake_llm.chat_requests()) == 1


def test_an_answer_cut_at_the_token_limit_is_a_failure_with_its_usage(fake_llm):
    fake_llm.script(Reply(content='{"memory": "# Mem', usage=(900, 64), finish_reason="length"))

    with pytest.raises(LLMError) as caught:
        get_provider().complete_json("s", "u", max_tokens=64)

    assert caught.value.message == (
        "the answer was cut off at the token limit (64 tokens); an unfinished answer is not used"
    )
    assert (caught.value.tokens_in, caught.value.tokens_out) == (900, 64)
    assert caught.value.cost == Decimal("0.000173")  # 900 × $0.15 + 64 × $0.60 per Mtok
    assert fake_llm.chat_requests()[0].body["max_tokens"] == 64


def test_even_a_cut_answer_that_parses_is_not_taken_as_a_rewrite(
    helper_agent, fake_llm, no_compile
):
    """The cut may fall right after a closing brace: a shorter MEMORY.md that parses is
    still an unfinished answer."""
    path = write_memory(helper_agent, OLD + "- Second line\n")
    write_note(helper_agent, f"{day(0)}.md", "- still in Hanoi\n")
    fake_llm.script(Reply(content=rewrite_answer("# Memory\n"), finish_reason="length"))

    run = consolidate_agent(helper_agent, trigger="test")

    assert run.status == "failed"
    assert run.summary.startswith("the model answered badly: the answer was cut off")
    assert (run.tokens_in, run.tokens_out) == (120, 45)
    assert workspace.read(path) == OLD + "- Second line\n"
    assert not Proposal.objects.filter(kind="memory_rewrite").exists()


def test_an_anthropic_answer_stopped_at_max_tokens_is_cut(fake_llm, settings):
    settings.MEMORY_LLM_PROVIDER = "anthropic"
    settings.MEMORY_LLM_MODEL = "claude-haiku-4-5"
    fake_llm.script(Reply(content={"pages": []}, finish_reason="length"))

    with pytest.raises(LLMError, match="cut off at the token limit"):
        get_provider().complete_json("s", "u", max_tokens=100)
    assert fake_llm.chat_requests()[0].body["max_tokens"] == 100


def test_a_line_break_inside_a_json_string_is_that_character(fake_llm):
    """llama.cpp's schema grammar lets the model write a raw newline inside a string."""
    fake_llm.script('{"memory": "# Memory\n\n- Owner lives in Hanoi\n", "reasons": []}')

    data = get_provider().complete_json("s", "u").data

    assert data == {"memory": "# Memory\n\n- Owner lives in Hanoi\n", "reasons": []}


def test_a_fact_review_cut_at_the_token_limit_says_the_model_answered_badly(master, fake_llm):
    from memory import facts

    write_memory(master, OLD)
    write_note(master, f"{day(0)}.md", "- moved\n")
    facts.save_fact(
        "home",
        description="lives in Hanoi",
        type="profile",
        body="Hanoi",
        written_by="master",
        source="chat",
    )
    fake_llm.script(
        rewrite_answer(OLD),
        Reply(content={"proposals": []}, finish_reason="length"),
        {"pages": []},
    )

    run = consolidate_agent(master, trigger="test")

    review = Run.objects.get(kind="fact_review", trigger=f"consolidate:{run.pk}")
    assert review.status == "failed"
    assert review.summary.startswith("the model answered badly: the answer was cut off")
