from memory.models import Agent


def test_it_creates_the_master_agent_on_migrate(master):
    assert Agent.objects.get(is_default=True).pk == "master"
    assert master.dir == ""


def test_it_writes_inside_the_workspace(workspace):
    from memory import workspace as ws

    ws.write("memory/2026-11-30.md", "# 2026-11-30\n")
    assert (workspace / "memory" / "2026-11-30.md").read_text() == "# 2026-11-30\n"
