"""The CI recipes of ``odin schedule --github-actions`` / ``--gitlab-ci``: a workflow file a team commits, which
runs a loop unattended on the CI runners it already has and delivers the result as a pull (merge) request
(docs/delivery.md, "Runs in CI").

The task is the one value a user types that lands in the file. It is written once, inside a shell line of a YAML
literal block (``run: |`` / ``script: - |``), so YAML reads it verbatim; the shell line quotes it with
:func:`shlex.quote` (single quotes: ``$``, backquotes and ``"`` are literal), and for GitHub Actions, which
evaluates ``${{ … }}`` everywhere in a workflow, even inside ``run:``, a ``${{`` of the task is split
(``$''{{``: the same word to the shell, no expression to GitHub). Control characters (a line break) are refused
before this, by the command, as for the crontab line.
"""

from __future__ import annotations

import shlex

#: the workflow's Python and how odin-magic is installed there
PYTHON_VERSION = "3.12"
INSTALL = "python -m pip install odin-magic"
RUNS_DIR = ".odin-loop/runs/"


def shell_word(text: str, github: bool = False) -> str:
    """``text`` as one shell word; with ``github``, no ``${{`` left for GitHub's expressions to find."""
    word = shlex.quote(text)
    return word.replace("${{", "$''{{") if github else word


def run_line(loop: str, task: str, github: bool = False) -> str:
    return f"odin run {shlex.quote(loop)} --task {shell_word(task, github)} --unattended"


def github_actions(loop: str, task: str, cron: str, every: str) -> str:
    """A GitHub Actions workflow (``.github/workflows/odin-LOOP.yml``) running ``loop`` on ``cron`` (UTC)."""
    return "\n".join([
        f"# .github/workflows/odin-{loop}.yml: runs loop {loop} unattended {every} (cron in UTC), then opens",
        "# a pull request of its change with gh and the workflow's own token. Commit this file, and add the",
        "# repository secret ANTHROPIC_API_KEY (Settings > Secrets and variables > Actions); allow Actions to",
        "# create pull requests (Settings > Actions > General > Workflow permissions).",
        f"name: odin {loop}",
        '"on":',  # quoted: a YAML 1.1 reader (PyYAML) takes a bare `on` for true
        "  schedule:",
        f'    - cron: "{cron}"',
        "  workflow_dispatch: {}",
        "permissions:",
        "  contents: write",
        "  pull-requests: write",
        "concurrency:",
        f"  group: odin-{loop}",
        "  cancel-in-progress: false",
        "jobs:",
        "  odin:",
        "    runs-on: ubuntu-latest",
        "    timeout-minutes: 180",
        "    steps:",
        "      - uses: actions/checkout@v4",
        "        with:",
        "          fetch-depth: 0",
        "      - uses: actions/setup-python@v5",
        "        with:",
        f'          python-version: "{PYTHON_VERSION}"',
        "      - name: Install odin-magic",
        f"        run: {INSTALL}",
        "      - name: Identify the commits",
        "        run: |",
        '          git config user.name "github-actions[bot]"',
        '          git config user.email "41898282+github-actions[bot]@users.noreply.github.com"',
        f"      - name: Run {loop} unattended",
        "        env:",
        "          ANTHROPIC_API_KEY: ${{ secrets.ANTHROPIC_API_KEY }}",
        "        run: |",
        f"          {run_line(loop, task, github=True)}",
        "      - name: Open the pull request",
        "        env:",
        "          GH_TOKEN: ${{ github.token }}",
        "        run: |",
        '          odin deliver --branch "odin/ci-$GITHUB_RUN_ID-$GITHUB_RUN_ATTEMPT" --push --pr',
        "      - name: Upload the run directory",
        "        if: always()",
        "        uses: actions/upload-artifact@v4",
        "        with:",
        f"          name: odin-{loop}-runs",
        f"          path: {RUNS_DIR}",
        "          include-hidden-files: true",
        "          if-no-files-found: ignore",
        "",
    ])


def gitlab_ci(loop: str, task: str, cron: str, every: str) -> str:
    """A GitLab CI job (``.gitlab-ci.yml``) running ``loop`` in a scheduled pipeline."""
    return "\n".join([
        f"# .gitlab-ci.yml (or include it): runs loop {loop} unattended in scheduled pipelines, then pushes its",
        "# change as a branch with a merge request. Add the CI/CD variables ANTHROPIC_API_KEY and ODIN_PUSH_TOKEN",
        "# (a project access token with write_repository; both masked), then a pipeline schedule",
        f'# (Build > Pipeline schedules) with the cron "{cron}" ({every}).',
        f"odin-{loop}:",
        f"  image: python:{PYTHON_VERSION}",
        "  rules:",
        '    - if: $CI_PIPELINE_SOURCE == "schedule"',
        "  variables:",
        "    GIT_DEPTH: 0",
        "  script:",
        f"    - {INSTALL}",
        '    - git config user.name "odin (GitLab CI)"',
        '    - git config user.email "odin@$CI_SERVER_HOST"',
        '    - git checkout -B "$CI_COMMIT_REF_NAME" "$CI_COMMIT_SHA"',
        "    - |",
        f"      {run_line(loop, task)}",
        '    - git remote set-url --push origin "https://oauth2:${ODIN_PUSH_TOKEN}@${CI_SERVER_HOST}/${CI_PROJECT_PATH}.git"',
        '    - odin deliver --branch "odin/ci-$CI_PIPELINE_ID"',
        '    - git push -o merge_request.create -o merge_request.target="$CI_DEFAULT_BRANCH" origin "odin/ci-$CI_PIPELINE_ID"',
        "  artifacts:",
        "    when: always",
        f"    name: odin-{loop}-runs",
        "    paths:",
        f"      - {RUNS_DIR}",
        "",
    ])
