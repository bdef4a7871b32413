"""CI runs what the README tells a person to run (SPEC §18)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _commands(path: Path) -> list[str]:
    return [
        line.strip()
        for line in path.read_text().splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


def test_ci_runs_make_test():
    ci = ROOT / ".ci" / "run"
    assert os.access(ci, os.X_OK), ".ci/run must be executable"
    commands = _commands(ci)
    assert ci.read_text().startswith("#!")
    assert "set -euo pipefail" in commands, "a failing step must fail CI"
    assert any(re.fullmatch(r"(\S+=\S+ )*make test", command) for command in commands)
    # And nothing else runs pytest behind make's back.
    assert not any("pytest" in command for command in commands)


def test_make_test_runs_the_whole_suite():
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^test:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert recipe, "Makefile has a test target"
    assert "pytest" in recipe.group(1)
    assert re.search(r"^run:", makefile, re.MULTILINE)


def test_the_readme_opens_with_make_run_and_make_test():
    readme = (ROOT / "README.md").read_text()
    first_block = re.search(r"```(?:sh|bash|console)?\n(.*?)```", readme, re.DOTALL)
    assert first_block, "README starts with a code block of commands"
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines()]
    assert "make run" in commands
    assert "make test" in commands


def _recipe(makefile: str, target: str) -> str:
    recipe = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert recipe, f"Makefile has a {target} target"
    return recipe.group(1)


def test_ci_runs_every_suite_and_make_test_all_names_them():
    commands = _commands(ROOT / ".ci" / "run")
    tests = [i for i, c in enumerate(commands) if re.fullmatch(r"(\S+=\S+ )*make test", c)]
    assert len(tests) == 2, "make test on SQLite, then on PostgreSQL"
    for target in ("make test-browser", "make test-model", "make test-slow"):
        assert target in commands, target
        assert commands.index(target) > tests[0]
    makefile = (ROOT / "Makefile").read_text()
    assert "pytest tests/ops " in _recipe(makefile, "test-slow")
    assert "pytest tests/browser " in _recipe(makefile, "test-browser")
    assert "pytest tests/model " in _recipe(makefile, "test-model")
    assert "--durations=20" in _recipe(makefile, "test")
    everything = re.search(r"^test-all:(.*)$", makefile, re.MULTILINE)
    assert everything and everything.group(1).split() == [
        "test",
        "test-browser",
        "test-slow",
        "test-model",
    ]


def _collected(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return result.stdout


def test_the_separate_suites_are_collected_only_when_named():
    separate = ("ops", "browser", "model")
    # `pytest tests` with everything else left out: the three folders are not collected.
    others = [
        f"--ignore=tests/{path.name}"
        for path in sorted((ROOT / "tests").iterdir())
        if path.name not in separate
    ]
    unnamed = _collected("tests", *others)
    assert "no tests collected" in unnamed, unnamed
    named = _collected("tests/ops", "tests/browser", "tests/model/test_real_model.py")
    for folder in separate:
        assert f"tests/{folder}/" in named, named
