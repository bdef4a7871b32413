"""A model's answer checked against the JSON schema the model was sent (SPEC §13.1).

Each step sends its schema file (`consolidate_schema.json`, `hygiene_schema.json`,
`wiki/prompts/compile_schema.json`) with the prompt, and `memory.jobs.runs.ask_for_run`
checks the answer against that same schema here before the step's parser sees it: what the
model is asked for and what is accepted cannot drift apart. A parser keeps only the checks
a schema cannot state (each says which). An answer the schema refuses raises BadAnswer
naming the first thing wrong, in the words a person reads in the run's summary: "reason 1
has an unknown action 'delete'", "the answer lacks `reasons`".
"""

from __future__ import annotations

from collections.abc import Sequence

import jsonschema

from memory.jobs.llm import BadAnswer

_TYPE_WORDS = {
    "object": "an object",
    "array": "a list",
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


def check_answer(data: object, schema: dict) -> None:
    """Raise BadAnswer when `schema` refuses `data`, naming the shallowest fault (the
    first in document order among equally deep ones)."""
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(data))
    if errors:
        raise BadAnswer(reason(min(errors, key=lambda error: len(error.absolute_path))))


def reason(error: jsonschema.ValidationError) -> str:
    """One schema error in plain words."""
    path = list(error.absolute_path)
    where = _where(path)
    rule, schema, value = error.validator, error.schema, error.instance
    if rule == "required":
        missing = [key for key in schema["required"] if key not in value]
        return f"{where} lacks {_keys(missing)}"
    if rule == "additionalProperties":
        extra = sorted(key for key in value if key not in schema.get("properties", {}))
        noun = "key" if len(extra) == 1 else "keys"
        return f"{where} has the unexpected {noun} {_keys(extra)}"
    if rule == "type" and isinstance(schema["type"], str):
        return f"{where} is not {_TYPE_WORDS.get(schema['type'], schema['type'])}"
    if rule == "enum":
        owner, key = _split(path)
        allowed = ", ".join(str(choice) for choice in schema["enum"])
        return f"{owner} has an unknown {key or 'value'} {value!r} (one of {allowed})"
    return f"{where}: {error.message}"


def _keys(keys: list[str]) -> str:
    return ", ".join(f"`{key}`" for key in keys)


def _split(path: Sequence[object]) -> tuple[str, str]:
    """(the answer or the list item the path is in, the keys below it): `["reasons", 0,
    "action"]` → ("reason 1", "action"); `["memory"]` → ("the answer", "memory")."""
    owner: list[str] = []
    keys: list[str] = []
    for part in path:
        if isinstance(part, int):
            listed = keys.pop() if keys else "item"
            singular = listed[:-1] if listed.endswith("s") else f"{listed} item"
            owner += [*keys, f"{singular} {part + 1}"]
            keys = []
        else:
            keys.append(str(part))
    return ", ".join(owner) or "the answer", ".".join(keys)


def _where(path: Sequence[object]) -> str:
    """How a person names the place of a fault: "the answer", "`memory`", "reason 1",
    "proposal 2: `fact.body`"."""
    owner, key = _split(path)
    if not key:
        return owner
    return f"`{key}`" if owner == "the answer" else f"{owner}: `{key}`"
