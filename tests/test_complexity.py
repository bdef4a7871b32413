"""No function of the apps is above cyclomatic complexity 25 (radon), read on the code
itself: a function that branches that much is a check, a plan and a write in one, and is
split into them. An algorithm that cannot be split without hiding it may stay above the
limit only when it is named in EXEMPT with the test that checks it against a slow
reference implementation (docs/architecture.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Function

ROOT = Path(__file__).resolve().parent.parent
APPS = ("memory", "wiki", "proposals", "memoryproject")
LIMIT = 25
# "<path>:<qualified name>" → the test that checks it against a slow reference. Empty:
# every function is within the limit.
EXEMPT: dict[str, str] = {}


def _functions(function: Function, prefix: str = "") -> Iterator[tuple[str, int]]:
    name = f"{prefix}{function.classname + '.' if function.classname else ''}{function.name}"
    yield name, function.complexity
    for closure in function.closures:
        yield from _functions(closure, f"{name}.")


def complexities() -> dict[str, int]:
    """`<path>:<qualified name>` → cyclomatic complexity, for every function and method of
    the apps (migrations left out)."""
    found: dict[str, int] = {}
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            rel = path.relative_to(ROOT).as_posix()
            for block in cc_visit(path.read_text(encoding="utf-8")):
                if isinstance(block, Function):
                    for name, complexity in _functions(block):
                        found[f"{rel}:{name}"] = complexity
    return found


COMPLEXITIES = complexities()


def test_it_reads_every_function_with_its_methods_and_closures():
    assert COMPLEXITIES["wiki/pages.py:save_page"] >= 1
    assert "wiki/vault.py:Vault.changed" in COMPLEXITIES
    assert "wiki/vault.py:Vault._backlinks_after.edit" in COMPLEXITIES
    assert not any("/migrations/" in name for name in COMPLEXITIES)


def test_no_function_is_above_the_limit_unless_named_with_its_reference_test():
    above = {
        name: complexity
        for name, complexity in sorted(COMPLEXITIES.items())
        if complexity > LIMIT and name not in EXEMPT
    }

    assert above == {}, f"split these into check / plan / write steps: {above}"


def test_each_exemption_is_still_needed_and_names_a_test_that_exists():
    for name, reference in EXEMPT.items():
        assert COMPLEXITIES.get(name, 0) > LIMIT, f"{name} is within the limit: drop it"
        test_file, _, test_name = reference.partition("::")
        assert f"def {test_name}(" in (ROOT / test_file).read_text(encoding="utf-8"), reference
