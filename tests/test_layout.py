"""The house rules of docs/architecture.md, checked on the code itself (ast, no imports run):
no import circle, memory never imports wiki, proposals imports only memory's core, only the
workspace package (memory/workspace/) touches files, the rest of the app uses it through its
face (`memory.workspace`), and interfaces never import it: they call scope operations."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APPS = ("memory", "proposals", "wiki", "memoryproject")
# What proposals may use of memory: the bottom layer, nothing that imports proposals back.
MEMORY_CORE = {
    "memory.workspace",
    "memory.attribution",
    "memory.text",
    "memory.textdiff",
    "memory.errors",
    "memory.clock",
    "memory.owner",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _app_modules() -> dict[str, Path]:
    modules = {}
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" not in path.parts:
                modules[_module_name(path)] = path
    return modules


MODULES = _app_modules()


def _resolve(name: str) -> str | None:
    """The app module an imported name lives in (`memory.jobs.runs.start_run` →
    `memory.jobs.runs`), or None outside the apps."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str) -> set[str]:
    """Every app module `module` imports, at the top or inside a function."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from memory import workspace` imports memory.workspace (a submodule), while
            # `from memory.jobs.runs import start_run` imports memory.jobs.runs.
            names = [f"{base}.{alias.name}" for alias in node.names]
        for name in names:
            target = _resolve(name)
            if target and target != module:
                found.add(target)
    return found


GRAPH = {module: imports_of(module) for module in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return result


def test_it_finds_the_apps_modules():
    assert {"memory.workspace", "memory.jobs.nightly", "memory.api.urls", "wiki.compile"} <= set(
        MODULES
    )
    assert "memory.jobs.runs" in GRAPH["memory.jobs.nightly"]
    assert "memory.workspace.locks" in GRAPH["memory.workspace"]


def test_the_cycle_finder_sees_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_there_is_no_import_circle():
    assert _cycles(GRAPH) == []


def test_memory_never_imports_wiki():
    offenders = {
        module: sorted(target for target in targets if target.startswith("wiki"))
        for module, targets in GRAPH.items()
        if module.split(".")[0] == "memory"
    }
    assert {module: found for module, found in offenders.items() if found} == {}


# --- the workspace package -----------------------------------------------------------------

WORKSPACE = "memory.workspace"


def _in_workspace(module: str) -> bool:
    return module == WORKSPACE or module.startswith(WORKSPACE + ".")


def _imports_workspace(targets: set[str]) -> list[str]:
    return sorted(target for target in targets if _in_workspace(target))


# Interfaces: the ways in (REST, pages, MCP, admin, template tags, tools, tasks, the
# middleware). They call scope operations, which call the workspace: so every rule about a
# file lives in its operation, and every interface gets it.
INTERFACE_PACKAGES = ("memory.api", "memory.manage", "memory.mcp")
INTERFACE_MODULES = {
    "memory.tools",
    "wiki.tools",
    "memory.tasks",
    "memory.jobs.tasks",
    "memoryproject.middleware",
}
INTERFACE_NAMES = {"admin", "api", "views", "forms", "urls", "manage_urls"}


def is_interface(module: str) -> bool:
    parts = module.split(".")
    return (
        any(module == p or module.startswith(p + ".") for p in INTERFACE_PACKAGES)
        or module in INTERFACE_MODULES
        or "templatetags" in parts
        or parts[-1] in INTERFACE_NAMES
    )


def test_it_knows_the_interfaces():
    interfaces = {module for module in MODULES if is_interface(module)}
    assert {
        "memory.api.user",
        "memory.manage.memory",
        "memory.mcp.server",
        "memory.admin",
        "memory.templatetags.memory_pages",
        "wiki.api",
        "wiki.views",
        "proposals.admin",
        "memoryproject.middleware",
    } <= interfaces
    assert not {"memory.notes", "memory.facts", "memory.reading", "proposals.actions"} & interfaces


def test_the_rule_sees_an_interface_that_imports_the_workspace():
    graph = {"memory.api.user": {"memory.facts", "memory.workspace"}, "memory.facts": set()}
    assert {m: _imports_workspace(t) for m, t in graph.items() if is_interface(m)} == {
        "memory.api.user": ["memory.workspace"]
    }


def test_interfaces_never_import_the_workspace():
    offenders = {
        module: _imports_workspace(targets)
        for module, targets in GRAPH.items()
        if is_interface(module) and _imports_workspace(targets)
    }
    assert offenders == {}, "call a scope operation (e.g. notes.read_memory_with_hash) instead"


def test_the_workspace_is_used_through_its_face():
    """Outside the package, only `memory.workspace` itself is imported, never one of its
    modules: what the package offers is its `__all__`."""
    offenders = {
        module: sorted(t for t in targets if _in_workspace(t) and t != WORKSPACE)
        for module, targets in GRAPH.items()
        if not _in_workspace(module)
    }
    assert {module: found for module, found in offenders.items() if found} == {}


def test_the_workspace_imports_nothing_above_it():
    allowed = {"memory.errors", "memory.attribution"}
    offenders = {
        module: sorted(t for t in targets if not _in_workspace(t) and t not in allowed)
        for module, targets in GRAPH.items()
        if _in_workspace(module)
    }
    assert {module: found for module, found in offenders.items() if found} == {}


def test_proposals_uses_only_memorys_core():
    offenders = {
        module: sorted(t for t in targets if t.startswith("memory") and t not in MEMORY_CORE)
        for module, targets in GRAPH.items()
        if module.startswith("proposals")
    }
    assert {module: found for module, found in offenders.items() if found} == {}


# --- file IO ----------------------------------------------------------------------------

FILE_CALLS = {
    "open",
    "read_text",
    "write_text",
    "read_bytes",
    "write_bytes",
    "listdir",
    "scandir",
    "walk",
    "remove",
    "unlink",
    "rename",
    "replace",
    "makedirs",
    "mkdir",
    "rmdir",
    "iterdir",
    "glob",
    "rglob",
    "rmtree",
    "copyfile",
}
# Files that are not memory: the repo's own prompt files, the key file, the zone.
ALLOWED = {
    ("memory/jobs/llm.py", "read_text"),  # prompt templates in the repo
    ("memory/tools.py", "read_text"),  # tool schemas and descriptions in the repo
    ("memory/mcp/server.py", "read_text"),  # the MCP prompts in the repo
    ("memoryproject/settings.py", "read_text"),  # var/secret_key, read only
    ("memoryproject/settings.py", "open"),  # /etc/timezone
    # Start-up writes the key file and makes the SQLite database 0600 (settings never write).
    ("memory/management/commands/memory_init.py", "read_text"),
    ("memory/management/commands/memory_init.py", "mkdir"),
    ("memory/management/commands/memory_init.py", "open"),
    # The search index: a cache of its own under MEMORY_SEARCH_DIR, on the host's disk and
    # never under MY_AGENT_HOME (index_path refuses that); memory files are read for it
    # through the workspace package.
    ("memory/search_store.py", "mkdir"),
    ("memory/search_store.py", "open"),  # its locks, generations, `current`, state.json
    ("memory/search_store.py", "replace"),  # `current` and state.json (never an SQLite file)
    ("memory/search_store.py", "unlink"),  # generations nobody reads any more
    ("memory/search_store.py", "listdir"),  # which generations there are
    ("memory/search_keeper.py", "open"),  # /proc/self/mountinfo: is the workspace local?
}


def _file_calls(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            # str.replace and friends are not file calls: only os./shutil./Path-like ones
            # and the builtin open are counted.
            if name in FILE_CALLS:
                owner = func.value if isinstance(func, ast.Attribute) else None
                if name == "replace" and not (
                    isinstance(owner, ast.Name) and owner.id in {"os", "shutil"}
                ):
                    continue
                calls.add(name)
    return calls


@pytest.mark.parametrize(
    "rel",
    sorted(
        str(path.relative_to(ROOT)) for module, path in MODULES.items() if not _in_workspace(module)
    ),
)
def test_only_the_workspace_package_touches_files(rel):
    calls = {name for name in _file_calls(ROOT / rel) if (rel, name) not in ALLOWED}
    assert calls == set(), f"{rel} calls {sorted(calls)}: go through memory.workspace"


def test_the_workspace_package_is_where_the_file_calls_are():
    assert _file_calls(ROOT / "memory/workspace/writing.py") >= {"open", "replace", "unlink"}
