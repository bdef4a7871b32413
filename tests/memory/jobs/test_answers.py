"""A model's answer is checked against the very schema file the model was sent (SPEC §13.1,
memory.jobs.answers): whatever a schema refuses fails the step with a reason a person
can read, and the code's constants and the schemas name the same choices."""

from __future__ import annotations

import jsonschema
import pytest

from memory import facts, workspace
from memory.jobs.answers import check_answer
from memory.jobs.llm import BadAnswer, load_schema
from memory.jobs.nightly import consolidate_agent
from memory.models import Run
from memory.text import FACT_TYPES
from proposals.models import Proposal
from tests.memory.jobs.conftest import day, rewrite_answer, write_memory, write_note
from wiki.compile import PROMPTS_DIR as WIKI_PROMPTS
from wiki.vault import KINDS

CONSOLIDATE = load_schema("consolidate_schema.json")
HYGIENE = load_schema("hygiene_schema.json")
COMPILE = load_schema("compile_schema.json", WIKI_PROMPTS)
REASON = {"line": "- a", "action": "keep", "why": "still true"}
PAGE = {
    "title": "Eco",
    "kind": "entity",
    "sources": ["note:2026-11-20"],
    "questions": [],
    "status": "ok",
    "body": "Due.",
}


@pytest.mark.parametrize(
    "schema", [CONSOLIDATE, HYGIENE, COMPILE], ids=["rewrite", "review", "compile"]
)
def test_each_schema_file_is_a_valid_json_schema(schema):
    jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize(
    ("schema", "answer"),
    [
        (CONSOLIDATE, {"memory": "# Memory\n", "reasons": [REASON]}),
        (HYGIENE, {"proposals": [{"name": "a", "action": "forget", "why": "old"}]}),
        (
            HYGIENE,
            {"proposals": [{"name": "a", "action": "update", "why": "x", "fact": {"body": "b"}}]},
        ),
        (
            HYGIENE,
            {"proposals": [{"name": f"f{n}", "action": "forget", "why": "x"} for n in range(12)]},
        ),
        (COMPILE, {"pages": [PAGE, {**PAGE, "status": "review"}]}),
        (COMPILE, {"pages": [{**PAGE, "sources": ["web", "note:yesterday"]}]}),
    ],
    ids=["rewrite", "forget", "update", "twelve-proposals", "pages", "sources-the-code-judges"],
)
def test_an_answer_in_the_schemas_shape_passes(schema, answer):
    check_answer(answer, schema)


@pytest.mark.parametrize(
    ("schema", "answer", "reason"),
    [
        (CONSOLIDATE, {"memory": "x"}, "the answer lacks `reasons`"),
        (CONSOLIDATE, {}, "the answer lacks `memory`, `reasons`"),
        (CONSOLIDATE, {"memory": 1, "reasons": []}, "`memory` is not a string"),
        (CONSOLIDATE, {"memory": "x", "reasons": "none"}, "`reasons` is not a list"),
        (CONSOLIDATE, {"memory": "x", "reasons": ["keep"]}, "reason 1 is not an object"),
        (
            CONSOLIDATE,
            {"memory": "x", "reasons": [REASON, {**REASON, "action": "delete"}]},
            "reason 2 has an unknown action 'delete' (one of keep, fix, drop, merge, add)",
        ),
        (
            CONSOLIDATE,
            {"memory": "x", "reasons": [{"line": "a", "action": "keep"}]},
            "reason 1 lacks `why`",
        ),
        (
            CONSOLIDATE,
            {"memory": "x", "reasons": [], "summary": "done"},
            "the answer has the unexpected key `summary`",
        ),
        (HYGIENE, {"changes": []}, "the answer lacks `proposals`"),
        (
            HYGIENE,
            {"proposals": [{"name": "a", "action": "rename", "why": "x"}]},
            "proposal 1 has an unknown action 'rename' (one of forget, update)",
        ),
        (
            HYGIENE,
            {"proposals": [{"name": "a", "action": "update", "why": "x", "fact": {"body": 3}}]},
            "proposal 1: `fact.body` is not a string",
        ),
        (
            HYGIENE,
            {"proposals": [{"name": "a", "action": "update", "why": "x", "fact": {"type": "x"}}]},
            "proposal 1 has an unknown fact.type 'x' "
            "(one of profile, preference, feedback, project, reference)",
        ),
        (
            HYGIENE,
            {
                "proposals": [
                    {"name": "a", "action": "forget", "why": "x", "fact": {"a": "", "b": ""}}
                ]
            },
            "proposal 1: `fact` has the unexpected keys `a`, `b`",
        ),
        (COMPILE, {"pages": {"title": "Eco"}}, "`pages` is not a list"),
        (COMPILE, {"pages": [PAGE, "Eco"]}, "page 2 is not an object"),
        (
            COMPILE,
            {"pages": [{**PAGE, "status": "draft"}]},
            "page 1 has an unknown status 'draft' (one of ok, review)",
        ),
        (
            COMPILE,
            {"pages": [{**PAGE, "kind": "place"}]},
            "page 1 has an unknown kind 'place' (one of entity, concept, synthesis)",
        ),
        (COMPILE, {"pages": [{**PAGE, "sources": [3]}]}, "page 1, source 1 is not a string"),
        (
            COMPILE,
            {"pages": [{key: value for key, value in PAGE.items() if key != "questions"}]},
            "page 1 lacks `questions`",
        ),
        (COMPILE, {"pages": [{**PAGE, "body": None}]}, "page 1: `body` is not a string"),
    ],
)
def test_an_answer_the_schema_refuses_is_a_bad_answer_that_says_why(schema, answer, reason):
    with pytest.raises(BadAnswer) as refused:
        check_answer(answer, schema)

    assert str(refused.value) == reason


def test_the_schemas_name_the_choices_the_code_knows():
    fact = HYGIENE["properties"]["proposals"]["items"]["properties"]["fact"]
    assert tuple(fact["properties"]["type"]["enum"]) == FACT_TYPES
    page = COMPILE["properties"]["pages"]["items"]["properties"]
    assert tuple(page["kind"]["enum"]) == KINDS


def test_a_rewrite_with_a_key_the_schema_does_not_have_fails_with_that_reason(
    helper_agent, fake_llm
):
    path = write_memory(helper_agent, "# Memory\n")
    write_note(helper_agent, f"{day(0)}.md", "- news\n")
    fake_llm.script({**rewrite_answer("# Memory\n- news\n"), "confidence": 0.9}, {"pages": []})

    run = consolidate_agent(helper_agent, trigger="test")

    assert (run.status, run.summary) == (
        "failed",
        "the model answered badly: the answer has the unexpected key `confidence`",
    )
    assert not Proposal.objects.exists()
    assert fake_llm.chat_requests()[0].body["response_format"]["json_schema"]["schema"] == (
        CONSOLIDATE
    )
    assert workspace.read(path) == "# Memory\n"


def test_a_fact_review_with_an_unknown_fact_type_proposes_nothing(master, fake_llm):
    facts.save_fact(
        "home",
        description="lives in Hanoi",
        type="profile",
        body="Hanoi",
        written_by="x",
        source="chat",
    )
    write_memory(master, "# Memory\n")
    write_note(master, f"{day(0)}.md", "- moved\n")
    update = {"name": "home", "action": "update", "why": "moved", "fact": {"type": "place"}}
    fake_llm.script(rewrite_answer("# Memory\n- moved\n"), {"proposals": [update]}, {"pages": []})

    run = consolidate_agent(master, trigger="test")

    review = Run.objects.get(kind="fact_review", trigger=f"consolidate:{run.pk}")
    assert (review.status, review.summary) == (
        "failed",
        "the model answered badly: proposal 1 has an unknown fact.type 'place' "
        "(one of profile, preference, feedback, project, reference); no fact proposals",
    )
    assert not Proposal.objects.filter(kind="fact_review").exists()
