"""Where a test goes (docs/architecture.md, "Tests"), checked on the tests themselves (ast,
no imports run): tests/spec is black-box — one file per SPEC §, named test_sNN_<topic>.py,
importing no app module, not even through a helper module; its conftest.py is the harness
and may. Every other folder of tests mirrors a package of the code."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SPEC = TESTS / "spec"
APPS = ("memory", "wiki", "proposals", "memoryproject")
SECTIONS = range(0, 19)  # §0–§18 of the spec
# Suites of their own, not by package: the contract, processes, a browser, a real model.
BY_KIND = ("spec", "ops", "browser", "model")
CODE = (*APPS, "bench")


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def _test_module(name: str) -> Path | None:
    """The file of a module under tests/ (`tests.spec.steps` → tests/spec/steps.py)."""
    if not name.startswith("tests."):
        return None
    base = ROOT.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def app_imports(path: Path, seen: set[Path] | None = None) -> set[str]:
    """The app modules `path` imports, itself or through the tests' own helper modules."""
    seen = seen if seen is not None else set()
    seen.add(path)
    found = set()
    for name in _imported(path):
        if name.split(".")[0] in APPS:
            found.add(name)
        helper = _test_module(name)
        if helper is not None and helper not in seen and helper.name != "conftest.py":
            found |= {f"{name} → {inner}" for inner in app_imports(helper, seen)}
    return found


def test_it_sees_an_app_import_through_a_helper(tmp_path):
    spec_like = tmp_path / "test_sneaky.py"
    spec_like.write_text(
        "from tests.proposals.helpers import FACT\nfrom tests.helpers import call_tool\n"
    )
    found = app_imports(spec_like)
    assert "tests.proposals.helpers → memory.facts" in found
    assert not any(name.startswith("tests.helpers") for name in found)


def test_spec_files_import_no_app_module():
    offenders = {
        path.name: sorted(found)
        for path in sorted(SPEC.glob("*.py"))
        if path.name != "conftest.py" and (found := app_imports(path))
    }
    assert offenders == {}, "tests/spec drives the app over HTTP, MCP, tools and commands"


def test_spec_files_are_one_per_section():
    names = sorted(path.name for path in SPEC.glob("test_*.py"))
    pattern = re.compile(r"test_s(\d\d)_[a-z0-9_]+\.py")
    assert [name for name in names if not pattern.fullmatch(name)] == []
    sections = [int(pattern.fullmatch(name).group(1)) for name in names]
    assert all(section in SECTIONS for section in sections), sections
    assert len(sections) == len(set(sections)), "one file per §"


def folders_off_the_code(tests: Path, root: Path) -> list[str]:
    """The folders of `tests` holding tests (a test_*.py) that mirror no package of the
    code under `root` (tests/memory/jobs ↔ memory/jobs), the suites by kind left aside."""
    found = []
    for folder in sorted(path for path in tests.rglob("*") if path.is_dir()):
        relative = folder.relative_to(tests)
        if relative.parts[0] in BY_KIND or not any(folder.glob("test_*.py")):
            continue
        code = root / relative
        if relative.parts[0] not in CODE or not any(code.glob("*.py")):
            found.append(relative.as_posix())
    return found


def test_the_mirror_rule_sees_a_folder_off_the_code(tmp_path):
    for name in ("memory/jobs/runs.py", "wiki/pages.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    tests = tmp_path / "tests"
    for name in (
        "memory/jobs/test_runs.py",
        "wiki/test_pages.py",
        "pages/test_wiki_pages.py",
        "memory/manage/test_queue.py",
        "spec/test_s01_workspace_layout.py",
        "helpers_only/serve.py",
    ):
        (tests / name).parent.mkdir(parents=True, exist_ok=True)
        (tests / name).write_text("")
    assert folders_off_the_code(tests, tmp_path) == ["memory/manage", "pages"]


def test_every_folder_of_tests_mirrors_a_package_of_the_code():
    assert folders_off_the_code(TESTS, ROOT) == [], "tests/<package>/test_<module>.py"
