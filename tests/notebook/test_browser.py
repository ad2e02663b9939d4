"""A real browser: JupyterLab on 127.0.0.1, headless Debian chromium driven by Playwright.

Opens the quickstart notebook (cut after the cell that answers the deep
interview's last question, without its ``--wait``), runs it: the run starts, the
`%odin answer` cells answer the interview, the run pauses for the interview's
approval; then clicks Approve in the rendered widget the moment the panel
appears, and checks that the click was not refused and state.json advanced.
Needs /usr/bin/chromium (``apt-get install -y chromium``).
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import nbformat
import pytest

from support.nbtools import REPO
from odin_magic.loop.catalog import LoopCatalog
from odin_magic.loop.roadmap import ROADMAP_FILE, load_roadmap
from odin_magic.runs.roadmap_progress import progress
from support.roadmap_projects import roadmap_project

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium "
                       "(apt-get install -y chromium); .ci/run installs it"),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def quickstart_to_interview_approval(where: Path) -> Path:
    """The quickstart, cut after the cell tagged ``odin-interview-done`` (its last answer ends the interview).

    That cell's ``--wait`` is dropped: the kernel is idle while the drive announces the pause, as when a
    user answers without waiting, so a click on the panel reaches the kernel while that drive finishes."""
    nb = nbformat.read(REPO / "example_notebooks" / "quickstart.ipynb", as_version=4)
    cut = next(i for i, c in enumerate(nb.cells) if "odin-interview-done" in c.metadata.get("tags", []))
    nb.cells = nb.cells[: cut + 1]
    assert nb.cells[cut].source.rstrip().endswith(" --wait")
    nb.cells[cut].source = nb.cells[cut].source.rstrip()[: -len(" --wait")]
    path = where / "quickstart.ipynb"
    nbformat.write(nb, path)
    shutil.copy(REPO / "example_notebooks" / "quickstart.script.yaml", where / "quickstart.script.yaml")
    return path


@pytest.fixture
def lab(tmp_path):
    """JupyterLab serving tmp_path/work; yields its base URL; stopped by its PID."""
    work = tmp_path / "work"
    work.mkdir()
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ODIN_SCRIPT", "JPY_SESSION_NAME")}
    env.update(JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ServerApp.token=",
         "--ServerApp.password=", "--ip=127.0.0.1", f"--port={port}", "--port-retries=0",
         f"--ServerApp.root_dir={work}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
    )
    lines: queue.Queue[str] = queue.Queue()
    log: list[str] = []

    def pump():
        for line in proc.stderr:
            log.append(line)
            lines.put(line)
        lines.put("")

    threading.Thread(target=pump, daemon=True).start()
    try:
        while True:  # wait for the server's own "is running at" line (no polling)
            line = lines.get(timeout=60)
            if not line:
                pytest.fail("jupyter lab exited:\n" + "".join(log))
            if f"127.0.0.1:{port}" in line and "http" in line:
                break
        yield f"http://127.0.0.1:{port}", work, log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def read_state(work: Path) -> dict:
    runs = sorted((work / ".odin-loop" / "runs").iterdir())
    return json.loads((runs[-1] / "state.json").read_text())


def test_click_approve_in_jupyterlab_and_the_run_continues(lab):
    base, work, server_log = lab
    quickstart_to_interview_approval(work)
    try:
        drive_the_browser(base, work)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- jupyter lab log ---\n{''.join(server_log[-60:])}") from None
    state = read_state(work)
    assert state["current_stage"] == "plan" and state["status"] == "awaiting_approval"
    assert ("interview", "approved") in [(e["stage"], e["gate"]) for e in state["history"]]
    assert state["interview"]["rounds"] == 3  # answered by the notebook's `%odin answer` cells


def drive_the_browser(base: str, work: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(f"{base}/lab/tree/quickstart.ipynb?reset")
            # the kernel has started ("No Kernel | Initializing" is also data-status='idle'), and is idle
            expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(timeout=60_000)
            page.get_by_role("menuitem", name="Run", exact=True).click()
            page.get_by_role("menuitem", name="Run All Cells", exact=True).click()

            # the interview's questions, answered by the `%odin answer` cells, then its approval panel
            panel = page.locator(".odin-approval")
            expect(panel).to_contain_text("interview", timeout=90_000)
            expect(panel).to_contain_text("run ambiguity 0.10 <= threshold 0.15")  # the computed stop condition
            # click at once: the drive may still be announcing the pause; the click waits for it (issue 10 item 8)
            panel.get_by_role("button", name="Approve").click()
            # the panel of the next pause (plan) appears: the run continued in the background
            expect(page.locator(".odin-approval")).to_contain_text("plan", timeout=90_000)
            expect(page.get_by_text("the run is busy")).to_have_count(0)  # the click was never refused
            # the paused stage's diff section (plan writes only run-dir artifacts: no project file changed)
            expect(page.locator(".odin-approval .odin-stage-diff")).to_contain_text("What the stage changed")
            # the marks are characters of common fonts (this chromium has no emoji font): ‖ for the pause
            shown = page.locator(".odin-approval").inner_text() + page.locator(".odin-run-view").last.inner_text()
            assert "‖" in shown and "✓" in shown
            assert not set(shown) & set("✅🔄⏸⬜❌⛔"), "an emoji mark in the browser"
            state = read_state(work)
            assert state["interview"]["rounds"] == 3 and state["interview"]["ambiguity"] <= 0.15
            assert (work / ".odin-loop" / "runs" / state["run_id"] / "spec.md").is_file()  # beside the notebook
            # the interview's last question, in the cell that asked it: its view froze into the run's status when a
            # later cell took over (static HTML, the question panel closed), so the saved notebook keeps no widgets
            # rendered into the page (attached): JupyterLab 4.2 hides a cell far outside the window (windowing)
            for text in ("Any constraint on dependencies", "continued in a later cell"):
                expect(page.get_by_text(text).first).to_be_attached()
            expect(page.locator(".odin-question")).to_have_count(0)
        finally:
            browser.close()


def test_the_odin_new_form_in_jupyterlab_writes_a_valid_loop(lab):
    """`%odin new` rendered in JupyterLab: typed into and clicked through like a person would."""
    from playwright.sync_api import expect, sync_playwright

    base, work, server_log = lab
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("%load_ext odin_magic"), nbformat.v4.new_code_cell("%odin new browsed")]
    nbformat.write(nb, work / "new.ipynb")
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                page.goto(f"{base}/lab/tree/new.ipynb?reset")
                expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(timeout=60_000)
                page.get_by_role("menuitem", name="Run", exact=True).click()
                page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
                form = page.locator(".odin-new")
                expect(form).to_contain_text("question 1 of 7", timeout=90_000)

                def next_question(number: int) -> None:
                    form.get_by_role("button", name="Next").click()
                    expect(form).to_contain_text(f"question {number} of 7")

                form.get_by_placeholder("kind of work, e.g. general coding").fill("documentation")
                next_question(2)
                form.get_by_placeholder("one stage per line, as id: goal").fill(
                    "draft: Write the notes.\nreview: Independent review of the notes.")
                next_question(3)
                form.get_by_placeholder("check for draft").fill("the notes cover every point")
                form.get_by_placeholder("check for review").fill("review.md lists no blocking finding")
                expect(form).to_contain_text("check: review.md lists no blocking finding")  # the live preview
                for number in (4, 5, 6, 7):
                    next_question(number)
                form.get_by_role("button", name="Write loop").click()
                expect(form).to_contain_text("wrote", timeout=30_000)
            finally:
                browser.close()
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- jupyter lab log ---\n{''.join(server_log[-60:])}") from None
    loop = LoopCatalog(work).load("browsed")
    assert [s.id for s in loop.stages] == ["draft", "review"] and loop.stage("review").agent == "reviewer"
    assert loop.stage("draft").gate.check == "the notes cover every point"


DIFF_LOOP = """name: docs
max_iterations: 3
stages:
  - id: write
    produces: [docs/notes.md]
    gate: {mode: ai+human, check: the notes exist}
"""


def test_the_approval_panel_shows_the_stage_diff_and_reverts_it_in_jupyterlab(lab):
    """The paused stage's diff in the approval panel (one collapsible, coloured diff per file), then its
    "Revert this stage" button, clicked in a real browser."""
    from playwright.sync_api import expect, sync_playwright

    base, work, server_log = lab
    (work / "docs").mkdir()
    (work / "docs" / "old.md").write_text("kept\n")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("%load_ext odin_magic"),
                nbformat.v4.new_code_cell("%%odin loop docs\n" + DIFF_LOOP),
                nbformat.v4.new_code_cell('%odin run docs --task "notes" --dry')]
    nbformat.write(nb, work / "diff.ipynb")
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                page.goto(f"{base}/lab/tree/diff.ipynb?reset")
                expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(timeout=60_000)
                page.get_by_role("menuitem", name="Run", exact=True).click()
                page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
                panel = page.locator(".odin-approval")
                expect(panel).to_contain_text("write", timeout=90_000)
                diff = panel.locator(".odin-stage-diff")
                expect(diff).to_contain_text("1 file(s)")
                entry = diff.locator("details.odin-diff-file", has_text="docs/notes.md")
                expect(entry).to_contain_text("added")
                added_line = entry.get_by_text("+Placeholder written by an odin dry run", exact=False)
                expect(added_line).to_be_hidden()  # collapsed until opened
                entry.locator("summary").click()
                expect(added_line).to_be_visible()
                panel.get_by_role("button", name="Revert this stage").click()
                # the panel goes (the run continues from the stage) and the view says what happened
                expect(page.get_by_text("reverted to before execution 1 (write)")).to_be_visible(timeout=30_000)
                expect(page.locator(".odin-approval")).to_have_count(0)
            finally:
                browser.close()
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- jupyter lab log ---\n{''.join(server_log[-60:])}") from None
    assert not (work / "docs" / "notes.md").exists() and (work / "docs" / "old.md").read_text() == "kept\n"
    state = read_state(work)
    assert (state["status"], state["current_stage"]) == ("running", "write")


ROADMAP = "# Greeter\n\nautonomy: hitl\n\n## M1 Basics\n\n- [ ] p1 Greet with hello\n- [ ] p2 Add a farewell\n"
PHASE_CONTRACT = """\
risk: tiny-fix
scope: ["app.py"]
criteria:
  - {{id: AC1, priority: P0, text: "Given the app, then it says hello.", verify: "grep -q hello app.py"}}
gate: {{kind: programmatic, run: ["grep -q hello app.py"]}}
max_iterations: 3
loop: fix-{phase}
"""
PHASE_SCRIPT = """\
stages:
  apply-p1:
    - tools:
        - write: {file_path: app.py, content: "def greet():\\n    return 'hello'\\n"}
        - write: {file_path: "{run_dir}/change-notes.md", content: "greet says hello"}
    - text: done
default_verdict: {passed: true, reasons: [scripted]}
"""


def test_the_roadmap_phase_panel_start_and_skip_in_jupyterlab(lab):
    """`%odin roadmap run` (autonomy hitl) pauses before p1 with its contract panel; Start clicked in the browser
    runs p1 to done and the roadmap pauses before p2, whose panel's Skip, clicked, completes the roadmap."""
    from playwright.sync_api import expect, sync_playwright

    base, work, server_log = lab
    project = work / "greeter"
    contracts = roadmap_project(project, ROADMAP, ("p1", "p2"))
    for phase in ("p1", "p2"):
        (contracts / f"{phase}.yaml").write_text(PHASE_CONTRACT.format(phase=phase))
    (work / "roadmap.script.yaml").write_text(PHASE_SCRIPT)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("%load_ext odin_magic\n"
                                          "%odin config project=greeter script=../roadmap.script.yaml"),
                nbformat.v4.new_code_cell("%odin roadmap run")]
    nbformat.write(nb, work / "roadmap.ipynb")
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                page.goto(f"{base}/lab/tree/roadmap.ipynb?reset")
                expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(timeout=60_000)
                page.get_by_role("menuitem", name="Run", exact=True).click()
                page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
                first = page.locator(".odin-roadmap-phase").first
                expect(first).to_contain_text("phase p1 waits for you before it starts", timeout=90_000)
                expect(first).to_contain_text("Given the app, then it says hello.")  # its contract
                first.get_by_role("button", name="Start").click()
                # p1 ran: its text, then p2's panel (the roadmap's next pause), in the output of p1's panel
                second = first.locator(".odin-roadmap-phase")
                expect(second).to_contain_text("phase p2 waits for you before it starts", timeout=60_000)
                expect(first).to_contain_text("Started: phase p1 runs")
                expect(first.locator(".widget-output").first).to_contain_text("phase p1 done")
                expect(first.get_by_role("button", name="Start").first).to_be_disabled()
                second.get_by_role("button", name="Skip").click()
                expect(second.locator(".widget-output")).to_contain_text("roadmap complete", timeout=30_000)
            finally:
                browser.close()
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- jupyter lab log ---\n{''.join(server_log[-60:])}") from None
    roadmap = load_roadmap(project / ROADMAP_FILE)
    assert all(p.done for p in roadmap.phases())  # a skipped phase is checked off too
    states = progress(project, roadmap)
    assert (states["p1"].status, len(states["p1"].runs)) == ("done", 1)
    assert (states["p2"].status, states["p2"].runs) == ("skipped", [])
    assert "return 'hello'" in (project / "app.py").read_text()
