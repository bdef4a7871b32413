"""CI runs what the README tells a person to run (SPEC §18)."""

from __future__ import annotations

import os
import re
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


def test_ci_runs_the_model_tests_after_the_suite_and_make_test_leaves_them_out():
    commands = _commands(ROOT / ".ci" / "run")
    tests = [i for i, c in enumerate(commands) if re.fullmatch(r"(\S+=\S+ )*make test", c)]
    models = [i for i, c in enumerate(commands) if c == "make test-model"]
    assert tests and models and models[0] > tests[0]
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^test-model:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert recipe and "tests/model --model-tests" in recipe.group(1)


def test_tests_model_is_collected_only_with_model_tests():
    import subprocess
    import sys

    def collected(*args: str) -> str:
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return result.stdout

    assert "tests/model/" not in collected("tests/model")
    assert "tests/model/test_real_model.py::" in collected("tests/model", "--model-tests")
