"""Issue 23 item 6: the figure per evaluation of a metric gate, against its baseline and target — its series
read from a real run's gate evidence, its text (``odin status``), its chart, and the run's report (report.md's
PNG, report.ipynb's image, the notebook executed by nbclient)."""

from __future__ import annotations

import base64
import contextlib
import io

import nbformat
from nbclient import NotebookClient

from odin_magic.cli import main
from odin_magic.render.charts import png_bytes
from odin_magic.render.metric_chart import metric_chart
from odin_magic.render.metric_text import metric_lines
from odin_magic.runs.metric_history import read_series

from support.metric_runs import make_project, tuned_run

LINE = "p95 latency: 182 → 170 → 151 ms (baseline 182, target 160, reached)"


def test_the_series_of_a_real_run_is_its_figure_per_evaluation(project, write_loop):
    make_project(project, speed="182")
    engine, state = tuned_run(project, write_loop)
    assert state.status == "done" and [e.result for e in state.history] == ["fail", "pass"]
    [series] = read_series(engine.run_dir(state.run_id), state.history)
    assert (series.stage, series.name, series.unit, series.target) == ("tune", "p95 latency", "ms", 160)
    assert [(p.entry, p.figure, p.baseline, p.passed) for p in series.points] == [(1, 170, 182, False),
                                                                                  (2, 151, 170, True)]
    assert metric_lines([series]) == [LINE]
    assert png_bytes(metric_chart([series])).startswith(b"\x89PNG")


def test_odin_status_prints_the_figure_over_the_run(project, write_loop):
    make_project(project, speed="182")
    tuned_run(project, write_loop)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["status", "--project", str(project)]) == 0
    assert f"metrics (the first baseline, then the figure at each evaluation of the gate)\n  {LINE}" in out.getvalue()


def test_a_run_without_a_metric_gate_prints_no_metric(project, write_loop):
    write_loop()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["run", "demo", "--task", "t", "--dry", "--approve-all", "--project", str(project)])
        main(["status", "--project", str(project)])
    assert "metrics (" not in out.getvalue()


def test_the_report_holds_the_metric_chart_and_its_notebook_runs(project, write_loop):
    make_project(project, speed="182")
    engine, state = tuned_run(project, write_loop)
    d = engine.run_dir(state.run_id)
    md = (d / "report.md").read_text()
    assert f"## Metrics" in md and f"- {LINE}" in md
    assert "![metric.png](report/metric.png)" in md and (d / "report" / "metric.png").read_bytes().startswith(b"\x89PNG")
    nb = nbformat.read(d / "report.ipynb", as_version=4)
    NotebookClient(nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(d)}}).execute()
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert f"{state.run_id}: done at tune" in printed
    images = {name: data for c in nb.cells for name, data in (c.get("attachments") or {}).items()}
    assert base64.b64decode(images["metric.png"]["image/png"]).startswith(b"\x89PNG")
    assert any(LINE in c.source for c in nb.cells if c.cell_type == "markdown")
