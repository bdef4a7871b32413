"""The documents ship with the code and stay true to it: every § the repository cites is a
heading of docs/spec.md, nothing cites a ticket number instead, every variable settings.py
reads is documented in docs/configuration.md (and nothing else is), every link between the
documents resolves, and each document keeps its size."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SPEC = DOCS / "spec.md"
SETTINGS = ROOT / "memoryproject" / "settings.py"
CONFIGURATION = DOCS / "configuration.md"

CITATION = re.compile(r"§\s?(\d+(?:\.\d+)*)")
SPEC_HEADING = re.compile(r"^#{2,4} §(\d+(?:\.\d+)*) ", re.MULTILINE)
# What the before-stop hook looks for: a reference to a ticket instead of the contract.
TICKET = re.compile(r"\bissues? [0-9]+", re.IGNORECASE)
# Machine state and installed packages: not the repository's text.
SKIPPED_DIRS = {".git", ".venv", "node_modules", "var", "__pycache__", ".pytest_cache"}


def repository_files() -> list[Path]:
    """Every file of the repository as a clone has it, plus new files not yet committed
    (what git would add): app code, tests, bench, docs, templates, scripts."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode()
        paths = [ROOT / name for name in listed.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: walk the tree
        paths = [
            path for path in ROOT.rglob("*") if not SKIPPED_DIRS & set(path.relative_to(ROOT).parts)
        ]
    return sorted(path for path in paths if path.is_file())


def texts() -> dict[str, str]:
    """The repository's text files by relative path (binary files left out)."""
    found = {}
    for path in repository_files():
        try:
            found[path.relative_to(ROOT).as_posix()] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # screenshots, the compiled catalogue
    return found


def spec_sections() -> set[str]:
    return set(SPEC_HEADING.findall(SPEC.read_text(encoding="utf-8")))


def test_the_spec_has_every_section_of_the_contract():
    sections = spec_sections()
    assert {str(n) for n in range(19)} <= sections
    assert {"4.1", "4.2", "4.3", "6.1", "6.2", "10.1", "10.6", "13.1", "14.1"} <= sections


def test_every_cited_section_is_a_heading_of_the_spec():
    sections = spec_sections()
    unknown = sorted(
        f"{rel}:{text.count(chr(10), 0, match.start()) + 1}: §{match.group(1)}"
        for rel, text in texts().items()
        for match in CITATION.finditer(text)
        if match.group(1) not in sections
    )
    assert unknown == [], "cited but not in docs/spec.md"


def test_nothing_cites_a_ticket_instead_of_the_contract():
    found = sorted(
        f"{rel}:{text.count(chr(10), 0, match.start()) + 1}: {match.group(0)}"
        for rel, text in texts().items()
        for match in TICKET.finditer(text)
    )
    assert found == [], "cite the spec's § or the decision instead"


DECISION = re.compile(r'decisions\.md\)?[,;]? "([^"]+)"')


def test_every_cited_decision_is_a_topic_of_decisions_md():
    """`docs/decisions.md, "Search"` names a heading there (quoted titles may be wrapped
    over lines of a docstring or a comment)."""
    topics = set(re.findall(r"^#{2,3} (.+)$", (DOCS / "decisions.md").read_text(), re.MULTILINE))
    unknown = sorted(
        f"{rel}: {title}"
        for rel, text in texts().items()
        for title in DECISION.findall(re.sub(r"\s*\n\s*(?:#\s*)?", " ", text))
        if title not in topics
    )
    assert unknown == []


def test_the_ticket_pattern_is_the_hooks():
    word = "Issue"  # spelt apart, so this file holds no ticket number itself
    assert TICKET.search(f"as {word} 12.3 said") and TICKET.search(f"{word.lower()}s 16, 17")
    assert not TICKET.search("tissue 3") and not TICKET.search("the issue of scale")


# --- the settings and docs/configuration.md -------------------------------------------


def variables_settings_read() -> set[str]:
    """The environment variables settings.py reads: the first argument of each env_*
    helper call (the only way settings.py reads the environment, checked below)."""
    names = set()
    for node in ast.walk(ast.parse(SETTINGS.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            first = node.args[0]
            if name.startswith("env_") and isinstance(first, ast.Constant):
                names.add(first.value)
    return names


def variables_documented() -> set[str]:
    """The variables of docs/configuration.md's tables, before the section of those read
    outside the settings: one row each, the name in backticks in the first cell."""
    text = CONFIGURATION.read_text(encoding="utf-8").split("\n## Read outside the settings")[0]
    return set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", text, re.MULTILINE))


def test_every_variable_the_settings_read_is_documented_and_nothing_else():
    read, documented = variables_settings_read(), variables_documented()
    assert len(read) > 50
    assert sorted(read - documented) == [], "read by settings.py, missing in configuration.md"
    assert sorted(documented - read) == [], "in configuration.md, not read by settings.py"


def test_the_settings_read_the_environment_only_through_the_helpers():
    """Outside the env_* helpers, `os.environ` appears once: the test databases' suffix,
    put back for the processes a test starts."""
    tree = ast.parse(SETTINGS.read_text(encoding="utf-8"))
    helpers = {
        id(node)
        for function in tree.body
        if isinstance(function, ast.FunctionDef) and function.name.startswith("env_")
        for node in ast.walk(function)
    }
    uses = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr == "environ" and id(node) not in helpers
    ]
    lines = SETTINGS.read_text(encoding="utf-8").splitlines()
    assert [lines[node.lineno - 1].strip() for node in uses] == [
        'os.environ["MEMORY_TEST_DB_SUFFIX"] = _test_suffix'
    ]


def test_the_app_never_restates_a_settings_default():
    offenders = sorted(
        f"{rel}:{text.count(chr(10), 0, match.start()) + 1}"
        for rel, text in texts().items()
        if rel.endswith(".py")
        and rel.split("/")[0] in {"memory", "wiki", "proposals", "memoryproject"}
        for match in re.finditer(r"getattr\(settings,", text)
    )
    assert offenders == [], "read settings.X: every setting exists (memoryproject/settings.py)"


# --- the documents ---------------------------------------------------------------------


def test_every_link_between_the_documents_resolves():
    broken = []
    for page in [ROOT / "README.md", *sorted(DOCS.glob("*.md")), ROOT / "bench" / "README.md"]:
        text = page.read_text(encoding="utf-8")
        text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)  # code is not a link
        text = re.sub(r"`[^`\n]*`", "", text)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = target.split("#")[0]
            if not (page.parent / path).exists():
                broken.append(f"{page.relative_to(ROOT)} → {target}")
    assert broken == []


def test_every_dependency_says_why_in_decisions():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pinned = project["dependencies"] + [
        requirement for extra in project["optional-dependencies"].values() for requirement in extra
    ]
    names = {re.split(r"[\[=<>~ ]", requirement)[0].lower() for requirement in pinned}
    decisions = (DOCS / "decisions.md").read_text(encoding="utf-8")
    table = decisions.split("\n## Dependencies\n", 1)[1].lower()
    assert sorted(name for name in names if name not in table) == []


def test_the_readme_is_a_front_page_and_decisions_one_truth_per_topic():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    decisions = (DOCS / "decisions.md").read_text(encoding="utf-8")
    assert len(readme) <= 15_000, "the README is the front page: reference goes to docs/"
    assert len(decisions) <= 30_000, "decisions.md keeps the current truth; history is in git"
