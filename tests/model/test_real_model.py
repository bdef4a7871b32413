"""Consolidation, fact review and compile against a real model (SPEC §13): SmolLM2-135M
served by llama-cpp-python on loopback, through the real provider code — request,
constraint to the §13.1 schemas, parsing, usage, the window, timeouts and retries.

A 135M model writes poor memory; what is proven is the path: each run ends `succeeded`
with a valid proposal or `failed` with a clean reason, and records the usage the server
reported. Tests other than the end-to-end one stop the chained compile
(`chain_compile`), so that each proves one step in a few seconds of model time.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time

import pytest

from memory import facts, workspace
from memory.jobs import llm
from memory.jobs.consolidate import fit_prompt
from memory.jobs.llm import FORMATS, get_provider, load_schema
from memory.jobs.nightly import consolidate_agent
from memory.jobs.window import TEMPLATE_TOKENS, answer_room
from memory.models import Run
from memory.notes import NOTES_BUDGET
from proposals.models import Proposal
from tests.memory.jobs.conftest import day, write_memory, write_note
from tests.model.conftest import ALIAS, FIGURES, MAX_ANSWER, MODEL_WINDOW, ModelServer, free_port
from wiki.compile import PROMPTS_DIR as WIKI_PROMPTS

MEMORY = (
    "# Memory\n\n"
    f"- Owner lives in Hanoi ({day(-200)})\n"
    "- Owner drinks coffee every morning\n"
    f"- Works on the Eco Retreat contract with Minh ({day(-3)})\n"
)
NOTE = (
    "- 09:15 Call with Minh about the Eco Retreat contract: the deadline moved to {deadline}.\n"
    "- Owner said they now prefer green tea to coffee.\n"
    "- Walked 30 minutes by the lake; knee fine.\n"
    "- Booked the train to Da Nang for the retreat site visit.\n"
)
# A failed run's summary is one of these: the model's fault, said plainly.
CLEAN_FAILURE = re.compile(
    r"^the model (answered badly|call failed: (the answer was cut off at the token limit"
    r"|the model did not answer with one JSON object))"
)


def notes_for(agent, days: int = 3, repeat: int = 8) -> None:
    """`days` daily notes, each about 2,700 characters: together more than the window
    holds, so the block is cut to fit it."""
    for offset in range(days):
        write_note(agent, f"{day(-offset)}.md", NOTE.format(deadline=day(20 - offset)) * repeat)


def put_facts() -> None:
    for name, updated, body in (
        ("drink", str(day(-10)), "Owner drinks coffee every morning."),
        ("home-city", "2025-01-01", "Owner lives in Hanoi."),
        ("eco-retreat", str(day(-3)), "Eco Retreat contract with Minh, due soon."),
    ):
        workspace.write(
            facts.fact_path(name),
            facts.render_fact(
                name,
                description=body,
                type="reference" if name == "eco-retreat" else "profile",
                body=body,
                written_by="master",
                source="chat",
                updated=updated,
            ),
        )
    facts.regenerate_index()


def seconds(run: Run) -> float:
    return (run.finished_at - run.started_at).total_seconds()


def record(label: str, run: Run) -> None:
    FIGURES.append(
        f"{label}: {run.kind} #{run.pk} {run.status} in {seconds(run):.1f} s, "
        f"tokens {run.tokens_in} in / {run.tokens_out} out — {run.summary[:160]}"
    )


def assert_clean(run: Run) -> None:
    """Succeeded (a proposal, or nothing to propose) or failed for a reason the model
    gave; the usage the server reported is on the run either way."""
    assert run.status in ("succeeded", "held", "failed"), run.summary
    if run.status == "failed":
        assert CLEAN_FAILURE.match(run.summary), run.summary
    assert run.model == ALIAS
    assert run.tokens_in > 0 and run.tokens_out > 0
    assert run.tokens_in + run.tokens_out <= MODEL_WINDOW


@pytest.fixture
def no_compile(monkeypatch):
    monkeypatch.setattr("memory.jobs.nightly._follow_ups", {})


def test_the_schemas_compile_to_the_servers_grammar(model_server):
    """llama-cpp-python turns a schema into a GBNF grammar and, when it cannot, silently
    falls back to plain JSON: each §13.1 schema must convert and parse."""
    from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

    for schema in (
        load_schema("consolidate_schema.json"),
        load_schema("hygiene_schema.json"),
        load_schema("compile_schema.json", WIKI_PROMPTS),
    ):
        grammar = json_schema_to_gbnf(json.dumps(schema))
        LlamaGrammar.from_string(grammar, verbose=False)
        for key in schema["properties"]:
            assert f'"\\"{key}\\""' in grammar


def test_consolidation_fact_review_and_compile_end_to_end(master, real_model):
    write_memory(master, MEMORY)
    notes_for(master)
    put_facts()
    provider = get_provider()
    fitted = fit_prompt(provider, master, MEMORY, today=day(0))
    room = answer_room(MODEL_WINDOW)
    assert room == MAX_ANSWER
    # The budget followed the window: the block was cut well below SPEC's 40,000.
    assert fitted.prompt.block.cut and len(fitted.prompt.block.text) < NOTES_BUDGET
    assert fitted.tokens <= MODEL_WINDOW - room
    assert fitted.max_tokens == min(MAX_ANSWER, MODEL_WINDOW - fitted.tokens)
    assert llm._tokenizer[real_model.base_url] == "llama-cpp-python"  # the server's own count

    before = real_model.requests()
    run = consolidate_agent(master, trigger="test")

    review = Run.objects.filter(kind="fact_review", trigger=f"consolidate:{run.pk}").first()
    compiled = Run.objects.filter(kind="compile", agent=master).first()
    record("consolidate", run)
    if review is not None:
        record("fact review", review)
    record("compile", compiled)
    # Each call was constrained by the schema: llama-cpp-python refused OpenAI's
    # json_schema form and took {"type": "json_object", "schema": …}, remembered after.
    assert llm._accepted_format[(real_model.base_url, ALIAS, True)] == FORMATS.index(
        "json_object_schema"
    )
    calls = 1 + (review is not None) + 1
    assert real_model.requests() - before == calls + 1  # + the one refused json_schema

    assert_clean(run)
    # Our count (the server's tokenizer plus the template's margin) bounds what it read.
    assert run.tokens_in <= fitted.tokens <= run.tokens_in + TEMPLATE_TOKENS
    rewrite = Proposal.objects.filter(kind="memory_rewrite", run=run).first()
    if run.status == "failed":
        assert rewrite is None
    elif rewrite is not None:
        assert rewrite.status == "pending"  # master is not autonomous
        assert isinstance(rewrite.payload["memory"], str)
    assert workspace.read("MEMORY.md") == MEMORY  # proposed, never written

    if run.status == "failed":
        assert review is None  # no usable answer, no review
    else:
        assert_clean(review)
        for proposal in Proposal.objects.filter(kind="fact_review", run=review):
            assert proposal.status == "pending"  # always waits for a person
            assert proposal.payload["name"] in ("drink", "home-city", "eco-retreat")

    assert_clean(compiled)
    if compiled.status == "succeeded":
        assert re.match(
            r"(proposed \d+ page|no page with sources|the vault is up to date)", compiled.summary
        ), compiled.summary


def test_an_answer_cut_at_the_token_limit_fails_the_run(
    helper_agent, real_model, settings, no_compile
):
    settings.MEMORY_LLM_MAX_TOKENS = 6  # not enough for {"memory": …, "reasons": […]}
    path = write_memory(helper_agent, MEMORY)
    notes_for(helper_agent, days=1, repeat=1)

    run = consolidate_agent(helper_agent, trigger="test")

    record("cut at 6 tokens", run)
    assert run.status == "failed"
    assert run.summary == (
        "the model answered badly: the answer was cut off at the token limit (6 tokens); "
        "an unfinished answer is not used"
    )
    assert (run.tokens_out, run.model) == (6, ALIAS) and run.tokens_in > 0
    assert workspace.read(path) == MEMORY
    assert not Proposal.objects.filter(kind="memory_rewrite").exists()


def test_a_prompt_too_long_for_the_window_fails_before_any_call(
    helper_agent, real_model, no_compile
):
    long_memory = "# Memory\n\n" + "".join(
        f"- Fact number {n}: the owner keeps a note about topic {n} ({day(-n)})\n"
        for n in range(1, 120)
    )
    path = write_memory(helper_agent, long_memory)
    notes_for(helper_agent, days=1, repeat=1)
    before = real_model.requests()

    run = consolidate_agent(helper_agent, trigger="test")

    record("too long", run)
    assert run.status == "failed"
    match = re.fullmatch(
        r"prompt too long for model \((\d+) tokens, window 2048\); "
        r"384 tokens must stay free for the answer",
        run.summary,
    )
    assert match, run.summary
    assert int(match.group(1)) > MODEL_WINDOW - MAX_ANSWER
    assert (run.tokens_in, run.tokens_out) == (0, 0)
    assert real_model.requests() == before  # never asked
    assert workspace.read(path) == long_memory


def test_without_a_window_the_servers_refusal_fails_the_run(
    helper_agent, real_model, settings, no_compile
):
    settings.MEMORY_LLM_CONTEXT_TOKENS = 0  # not told: nothing is counted or cut
    path = write_memory(helper_agent, MEMORY)
    notes_for(helper_agent, repeat=12)  # about 10,000 characters of notes: past 2,048 tokens
    before = real_model.requests()

    run = consolidate_agent(helper_agent, trigger="test")

    record("server refuses", run)
    assert run.status == "failed"
    assert run.summary.startswith(
        "the model call failed: prompt too long for model (the endpoint says: "
        "This model's maximum context length is 2048 tokens"
    ), run.summary
    # json_schema refused, then the context error — not retried, not asked again.
    assert real_model.requests() - before == 2
    assert workspace.read(path) == MEMORY


def test_a_timeout_fails_the_run_without_retrying(helper_agent, real_model, settings, no_compile):
    settings.MEMORY_LLM_TIMEOUT = 0.5  # a 1,500-token prompt takes seconds to read
    path = write_memory(helper_agent, MEMORY)
    notes_for(helper_agent)
    before = real_model.generations()

    run = consolidate_agent(helper_agent, trigger="test")

    real_model.wait_idle()  # the server finishes the abandoned request
    record("timeout 0.5 s", run)
    assert run.status == "failed"
    assert run.summary == "the model call failed: the model did not answer within 0.5 s"
    assert (run.tokens_in, run.tokens_out) == (0, 0)
    # one completion, which the server ran to its end for nobody: no retry
    assert real_model.generations() - before == 1
    assert workspace.read(path) == MEMORY


def test_a_retry_reaches_a_server_that_comes_up_late(
    helper_agent, real_model, settings, tmp_path, no_compile
):
    """The endpoint is down at the first try; the model server starts then, and a retry
    (after MEMORY_LLM_RETRY_DELAY, doubled) gets the answer."""
    late = ModelServer(free_port(), tmp_path / "late.log")
    settings.MEMORY_LLM_BASE_URL = late.base_url
    settings.MEMORY_LLM_RETRY_DELAY = 5  # tries at 0, 5 and 15 s
    write_memory(helper_agent, MEMORY)
    notes_for(helper_agent, days=1, repeat=2)

    first_failure = threading.Event()

    class Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "(try 1/3)" in record.getMessage():
                first_failure.set()

    watch = Watch()
    logging.getLogger("memory.jobs.llm").addHandler(watch)
    starter = threading.Thread(target=lambda: first_failure.wait(60) and late.start(wait=False))
    starter.start()
    try:
        began = time.monotonic()
        run = consolidate_agent(helper_agent, trigger="test")
        took = time.monotonic() - began
    finally:
        logging.getLogger("memory.jobs.llm").removeHandler(watch)
        starter.join(60)
        late.stop()

    record("retry after down", run)
    assert first_failure.is_set()
    assert took >= 5  # at least one back-off waited
    assert_clean(run)  # answered: the retry reached the server
    assert late.requests() >= 1


def test_it_gives_up_after_three_tries_when_nothing_listens(
    helper_agent, real_model, settings, no_compile
):
    port = free_port()
    settings.MEMORY_LLM_BASE_URL = f"http://127.0.0.1:{port}/v1"
    settings.MEMORY_LLM_RETRY_DELAY = 0.01
    write_memory(helper_agent, MEMORY)
    notes_for(helper_agent, days=1, repeat=1)

    run = consolidate_agent(helper_agent, trigger="test")

    assert run.status == "failed"
    # Counting the prompt against the window is the first request: the tokenizer's.
    assert run.summary == (
        f"the model call failed: cannot reach http://127.0.0.1:{port}/extras/tokenize/count: "
        "ConnectError (after 3 tries)"
    )
    settings.MEMORY_LLM_CONTEXT_TOKENS = 0  # nothing to count: the chat call is tried

    run = consolidate_agent(helper_agent, trigger="test")

    assert run.summary == (
        f"the model call failed: cannot reach http://127.0.0.1:{port}/v1/chat/completions: "
        "ConnectError (after 3 tries)"
    )


def test_the_estimate_is_an_upper_bound_of_the_real_tokenizer(model_server, settings):
    """Without a tokenizer endpoint the window is kept with one token per UTF-8 byte:
    never fewer than the real count, here SmolLM2's small (49,152-token) vocabulary."""
    from memory.jobs.llm import OpenAIProvider
    from memory.jobs.window import estimate_tokens

    provider = OpenAIProvider(base_url=model_server.base_url, api_key="", model=ALIAS, timeout=60)
    samples = {
        "english": (WIKI_PROMPTS / "compile_system.md").read_text(),
        "vietnamese": "Chủ nhân sống ở Hà Nội, thích uống cà phê sữa đá vào buổi sáng. " * 20,
        "digits": "2026-11-30 12:34:56 1234567890 " * 20,
        "cjk": "我们今天讨论了项目的进展情况，明天继续。" * 10,
        "emoji": "🙂🎉🚀 ok " * 20,
        "json": json.dumps(load_schema("hygiene_schema.json")),
    }
    for name, text in samples.items():
        real = provider.count_tokens(text)
        assert real <= estimate_tokens(text), name
        FIGURES.append(f"estimate {name}: {estimate_tokens(text)} bytes for {real} tokens")


def test_the_server_survives_its_first_completions(model_server):
    """llama.cpp's extra CPU buffer types crashed the server on its first completion on a
    CPU with AMX (the model loaded, the first matmul died): serve.py turns them off. Two
    completions answer 200 with text, and the process is still running after them."""
    import httpx

    for prompt in ("Say hello.", "Name a colour."):
        response = httpx.post(
            f"{model_server.base_url}/chat/completions",
            json={"model": ALIAS, "messages": [{"role": "user", "content": prompt}],
                  "max_tokens": 8},
            timeout=300,
        )  # fmt: skip
        assert response.status_code == 200, response.text
        assert response.json()["choices"][0]["message"]["content"].strip()
    assert model_server.process.poll() is None, model_server.log.read_text()[-2000:]
