"""The model's context window (SPEC §13, MEMORY_LLM_CONTEXT_TOKENS): the prompt budget
follows it, a prompt that cannot fit fails the run before any call, counted with the
server's tokenizer where it has one and an upper estimate otherwise. Against the fake
model, whose tokenizer counts one token per 4 characters; the real tokenizer:
tests/model."""

from __future__ import annotations

import pytest

from memory import facts, workspace
from memory.jobs import window
from memory.jobs.llm import get_provider
from memory.jobs.nightly import consolidate_agent
from memory.jobs.window import TEMPLATE_TOKENS, PromptTooLong, estimate_tokens, fit
from memory.models import Run
from memory.notes import MIN_CUT_CHARS, NOTES_BUDGET
from tests.fakellm import Reply
from tests.memory.jobs.conftest import day, rewrite_answer, write_memory, write_note

OLD = "# Memory\n\n- Owner lives in Hanoi\n"


class Chars:
    """Counts one token per character."""

    def __init__(self) -> None:
        self.counted: list[str] = []

    def count_tokens(self, text: str) -> int:
        self.counted.append(text)
        return len(text)


def build(size: int) -> tuple[str, str]:
    return "s" * 100, "u" * size


@pytest.fixture
def no_compile(monkeypatch):
    monkeypatch.setattr("memory.jobs.nightly._follow_ups", {})


def big_notes(agent, days: int = 7, size: int = 6_000) -> None:
    for offset in range(days):
        write_note(agent, f"{day(-offset)}.md", f"- note of day {offset}: " + "x" * size + "\n")


# --- the fit ---------------------------------------------------------------------------


def test_without_a_window_nothing_is_counted_and_the_largest_prompt_is_used(settings):
    settings.MEMORY_LLM_CONTEXT_TOKENS = 0
    counter = Chars()

    fitted = fit(counter, build, lambda p: p, largest=40_000, smallest=200)

    assert (fitted.size, fitted.tokens, fitted.max_tokens) == (40_000, None, None)
    assert counter.counted == []


def test_the_largest_size_that_leaves_room_for_the_answer_is_chosen(settings):
    settings.MEMORY_LLM_CONTEXT_TOKENS = 4_000
    settings.MEMORY_LLM_MAX_TOKENS = 8192  # room: a quarter of the window, 1,000
    counter = Chars()

    fitted = fit(counter, build, lambda p: p, largest=40_000, smallest=200, step=1)

    # 100 + "\n" + size + the template's 64 must stay within 4,000 - 1,000
    assert fitted.size == 3_000 - 100 - 1 - TEMPLATE_TOKENS
    assert fitted.tokens == 3_000
    assert fitted.max_tokens == 1_000
    assert len(counter.counted) < 20  # a bisection, not a scan


def test_the_answer_may_use_what_the_prompt_leaves_up_to_the_cap(settings):
    settings.MEMORY_LLM_CONTEXT_TOKENS = 4_000
    settings.MEMORY_LLM_MAX_TOKENS = 500

    fitted = fit(Chars(), build, lambda p: p, largest=1_000, smallest=200)

    assert fitted.size == 1_000  # fits at once
    assert fitted.tokens == 100 + 1 + 1_000 + TEMPLATE_TOKENS
    assert fitted.max_tokens == 500  # 4,000 - 1,165 left, capped at MEMORY_LLM_MAX_TOKENS


def test_a_prompt_that_cannot_fit_even_at_its_smallest_raises(settings):
    settings.MEMORY_LLM_CONTEXT_TOKENS = 400
    settings.MEMORY_LLM_MAX_TOKENS = 8192  # room 100

    with pytest.raises(PromptTooLong) as caught:
        fit(Chars(), build, lambda p: p, largest=40_000, smallest=200)

    assert caught.value.message == (
        f"prompt too long for model ({100 + 1 + 200 + TEMPLATE_TOKENS} tokens, window 400); "
        "100 tokens must stay free for the answer"
    )


def test_the_estimate_is_one_token_per_utf8_byte():
    assert estimate_tokens("hello") == 5
    assert estimate_tokens("Hà Nội") == 9
    assert estimate_tokens("🙂") == 4
    assert estimate_tokens("") == 0


# --- counting ----------------------------------------------------------------------------


def test_counting_uses_llama_cpp_pythons_tokenizer_and_remembers_it(fake_llm):
    fake_llm.tokenizer = "llama-cpp-python"
    provider = get_provider()

    assert provider.count_tokens("x" * 40) == 10
    assert provider.count_tokens("x" * 8) == 2

    paths = [r.path for r in fake_llm.requests]
    assert paths == ["/extras/tokenize/count", "/extras/tokenize/count"]
    assert fake_llm.requests[0].body == {"input": "x" * 40}


def test_counting_uses_llama_cpps_tokenizer(fake_llm):
    fake_llm.tokenizer = "llama.cpp"
    provider = get_provider()

    assert provider.count_tokens("x" * 40) == 10
    assert provider.count_tokens("y" * 4) == 1

    paths = [r.path for r in fake_llm.requests]
    assert paths == ["/extras/tokenize/count", "/tokenize", "/tokenize"]
    assert fake_llm.requests[1].body == {"content": "x" * 40}


def test_without_a_tokenizer_the_estimate_counts_and_nothing_is_asked_again(fake_llm):
    provider = get_provider()

    assert provider.count_tokens("Hà Nội") == 9
    assert provider.count_tokens("abc") == 3

    assert [r.path for r in fake_llm.requests] == ["/extras/tokenize/count", "/tokenize"]


# --- the steps -----------------------------------------------------------------------------


def test_the_notes_block_shrinks_to_fit_the_window(helper_agent, fake_llm, settings, no_compile):
    settings.MEMORY_LLM_CONTEXT_TOKENS = 4_096
    settings.MEMORY_LLM_MAX_TOKENS = 1_000
    fake_llm.tokenizer = "llama-cpp-python"
    write_memory(helper_agent, OLD)
    big_notes(helper_agent)  # 7 × 6,000 characters: 40,000 at most, about 10,000 tokens
    fake_llm.script(rewrite_answer(OLD + "- More\n"))

    run = consolidate_agent(helper_agent, trigger="test")

    assert run.status == "succeeded", run.summary
    (request,) = fake_llm.chat_requests()
    system, user = (m["content"] for m in request.body["messages"])
    tokens = fake_llm.count_tokens(f"{system}\n{user}") + TEMPLATE_TOKENS
    assert tokens <= 4_096 - 1_000
    assert tokens > 4_096 - 1_000 - MIN_CUT_CHARS  # the largest that fits, within a step
    assert request.body["max_tokens"] == min(1_000, 4_096 - tokens)
    assert f"## {day(0)}" in user and f"## {day(-2)}" not in user  # newest days kept
    assert "more characters of this day left out]" in user


def test_a_prompt_that_cannot_fit_fails_the_run_before_any_call(
    helper_agent, fake_llm, settings, no_compile
):
    settings.MEMORY_LLM_CONTEXT_TOKENS = 1_024
    fake_llm.tokenizer = "llama-cpp-python"
    memory = OLD + "".join(f"- line {n} " + "y" * 60 + "\n" for n in range(80))
    path = write_memory(helper_agent, memory)
    write_note(helper_agent, f"{day(0)}.md", "- a note\n")

    run = consolidate_agent(helper_agent, trigger="test")

    assert run.status == "failed"
    assert run.summary.startswith("prompt too long for model (")
    assert run.summary.endswith(" tokens, window 1024); 256 tokens must stay free for the answer")
    assert (run.tokens_in, run.tokens_out) == (0, 0)
    assert fake_llm.chat_requests() == []
    assert workspace.read(path) == memory


def test_fact_review_shows_the_facts_that_fit_and_says_how_many_were_left_out(
    master, fake_llm, settings
):
    settings.MEMORY_LLM_CONTEXT_TOKENS = 3_000
    settings.MEMORY_LLM_MAX_TOKENS = 500
    fake_llm.tokenizer = "llama-cpp-python"
    write_memory(master, OLD)
    write_note(master, f"{day(0)}.md", "- moved\n")
    for n in range(30):
        facts.save_fact(
            f"fact-{n:02d}",
            description=f"fact {n}",
            type="reference",
            body="z" * 400,
            written_by="master",
            source="chat",
        )
    fake_llm.script(rewrite_answer(OLD), {"proposals": []}, {"pages": []})

    run = consolidate_agent(master, trigger="test")

    review = Run.objects.get(kind="fact_review", trigger=f"consolidate:{run.pk}")
    assert review.status == "succeeded", review.summary
    prompt = fake_llm.chat_requests()[1].body["messages"][1]["content"]
    shown = prompt.count("\ndescription: fact ")
    assert 0 < shown < 30
    assert f"# Facts ({shown} shown of 30; {30 - shown} left out)" in prompt
    assert (
        review.summary == f"0 fact proposal(s) created; {30 - shown} fact(s) left out of the review"
    )


def test_a_compile_that_cannot_fit_fails_without_a_call(helper_agent, fake_llm, settings):
    from wiki.compile import compile_after_consolidation

    settings.MEMORY_LLM_CONTEXT_TOKENS = 600  # the compile system prompt alone is more
    fake_llm.tokenizer = "llama-cpp-python"
    write_note(helper_agent, f"{day(0)}.md", "- met Minh\n")

    run = compile_after_consolidation(helper_agent.id)

    assert run.status == "failed"
    assert run.summary.startswith("prompt too long for model (")
    assert fake_llm.chat_requests() == []


def test_an_unreachable_tokenizer_fails_the_run_as_an_unreachable_model(
    helper_agent, settings, no_compile, fake_llm
):
    fake_llm.stop()
    settings.MEMORY_LLM_CONTEXT_TOKENS = 4_096
    write_memory(helper_agent, OLD)
    write_note(helper_agent, f"{day(0)}.md", "- a note\n")

    run = consolidate_agent(helper_agent, trigger="test")

    assert run.status == "failed"
    assert run.summary.startswith("the model call failed: cannot reach http://127.0.0.1:")
    assert run.summary.endswith("/extras/tokenize/count: ConnectError (after 3 tries)")


def test_the_budget_never_exceeds_spec_even_with_a_huge_window(
    helper_agent, fake_llm, settings, no_compile
):
    settings.MEMORY_LLM_CONTEXT_TOKENS = 1_000_000
    fake_llm.tokenizer = "llama-cpp-python"
    write_memory(helper_agent, OLD)
    big_notes(helper_agent)
    fake_llm.script(rewrite_answer(OLD + "- More\n"))

    consolidate_agent(helper_agent, trigger="test")

    user = fake_llm.chat_requests()[0].body["messages"][1]["content"]
    notes_text = user.split("<notes>\n", 1)[1].rsplit("\n</notes>", 1)[0]
    assert len(notes_text) <= NOTES_BUDGET
    assert fake_llm.chat_requests()[0].body["max_tokens"] == 8192


def test_a_stop_reply_still_parses_with_the_window_set(
    helper_agent, fake_llm, settings, no_compile
):
    settings.MEMORY_LLM_CONTEXT_TOKENS = 8_192
    write_memory(helper_agent, OLD)
    write_note(helper_agent, f"{day(0)}.md", "- a note\n")
    fake_llm.script(Reply(content=rewrite_answer(OLD + "- Added\n")))

    run = consolidate_agent(helper_agent, trigger="test")

    assert run.status == "succeeded", run.summary
    assert window.context_tokens() == 8_192
