"""Issue 23 item 6 in the notebook: a metric gate's figure per evaluation in the live view (a chart re-drawn at
each gate decision, off the drive's thread) and in `%odin status` (its lines: the CLI's text; its chart: a PNG
in the HTML)."""

from __future__ import annotations

import contextlib
import io
import textwrap

import pytest
from IPython.utils.capture import capture_output

from odin_magic.cli import main
from odin_magic.render.displays import StatusDisplay

from support.metric_runs import make_project, tune_loop, tune_script

PNG = b"\x89PNG\r\n\x1a\n"
LINE = "p95 latency: 182 → 170 → 151 ms (baseline 182, target 160, reached)"


@pytest.fixture
def project(ip, tmp_path):
    make_project(tmp_path, speed="182")
    loops = tmp_path / ".odin-loop" / "loops"
    loops.mkdir(parents=True)
    (loops / "tune.yaml").write_text(textwrap.dedent(tune_loop("repeat: 1, target: 160")))
    script = tmp_path.parent / f"{tmp_path.name}.script.yaml"
    script.write_text(tune_script("170", "151"), encoding="utf-8")
    ip.run_line_magic("odin", f"config project={tmp_path} script={script}")
    magics = ip.magics_manager.registry["OdinMagics"]
    yield tmp_path
    magics.runner().stop()
    magics.runner().wait(30)
    magics.project, magics.script = "", None


def test_the_live_view_draws_the_metric_chart_and_status_shows_it(ip, project):
    magics = ip.magics_manager.registry["OdinMagics"]
    ip.run_line_magic("odin", "config widgets=True")
    try:
        with capture_output():
            ip.run_line_magic("odin", "run tune --task faster --wait")
        charts = list(magics.runner().charts)
    finally:
        ip.run_line_magic("odin", "config widgets=False")
    assert len(charts) == 2 and all(c.png is not None and c.png.startswith(PNG) for c in charts)
    shown = ip.run_line_magic("odin", "status")
    assert isinstance(shown, StatusDisplay) and [s.name for s in shown.metrics] == ["p95 latency"]
    data, _ = ip.display_formatter.format(shown)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["status", "--project", str(project)]) == 0
    assert data["text/plain"].rstrip("\n") == out.getvalue().rstrip("\n")  # the notebook's text is the CLI's
    assert f"  {LINE}" in data["text/plain"]
    page = shown._repr_html_()
    assert LINE in page and "<img alt='metric chart' src='data:image/png;base64," in page
