"""``%odin deliver`` in a real IPython shell: a done run becomes a branch, a refusal is one UsageError line."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from support.delivery_runs import git, init_repo, run_loop, user_side


@pytest.fixture
def project(ip, tmp_path):
    path = tmp_path / "project"
    path.mkdir()
    ip.run_line_magic("odin", f"config project={path}")
    yield path
    magics = ip.magics_manager.registry["OdinMagics"]
    magics.runner().stop()
    magics.project = ""


def test_odin_deliver_makes_the_branch_and_refuses_in_one_line(ip, project):
    init_repo(project)
    _, state = run_loop(project)
    before = user_side(project)
    shown = ip.run_line_magic("odin", "deliver --squash --branch nb/greeting")
    assert user_side(project) == before
    assert "branch nb/greeting: 1 commit(s)" in repr(shown)
    message = git(project, "log", "-1", "--format=%B", "nb/greeting")
    assert message.startswith("Deliver: say a new greeting") and f"Odin-Run: {state.run_id}" in message
    with pytest.raises(UsageError) as info:
        ip.run_line_magic("odin", f"deliver {state.run_id} --branch nb/greeting")
    assert type(info.value) is UsageError and "already exists" in str(info.value) and "hint" in str(info.value)
