"""The arguments of the run commands (run, step, approve, revise, answer, question, abandon, status, runs, report),
one definition for ``odin`` and ``%odin``."""

from __future__ import annotations

from odin_magic.commands.spec import MAGIC, ODIN, arg
from odin_magic.loop.defaults import DEFAULT_LOOP

#: ``%odin`` only: its run commands return at once, the drive going on in the background.
WAITING = (
    arg("--wait", only=MAGIC, action="store_true", help="block until the run pauses, ends or stops"),
    arg("--timeout", only=MAGIC, type=float, default=None, metavar="S", help="with --wait: give up after S seconds"),
)

RUN = (
    arg("loop", nargs="?", metavar="LOOP",
        help=f"loop to start (omit it to continue the active run; a new run's default is {DEFAULT_LOOP})"),
    arg("--task", help="one line: what you are building (needed to start a run)"),
    arg("--param", action="append", metavar="NAME=VALUE",
        help="a value for the loop's parameter NAME (its `params:`, written {{NAME}} in the loop), e.g. "
             "--param metric='python bench.py'; repeatable; a new run only"),
    arg("--dry", action="store_true", help="use the dry worker: no model; placeholder artifacts (project-tree ones "
                                           "land in your project), scripted gates"),
    arg("--gates", metavar="SPEC", help="dry gate script, e.g. test:fail,test:fail,review:fail (also STAGE:blocked, "
                                        "STAGE:concerns)"),
    arg("--approve-all", action="store_true", help="dry: approve every human gate as it comes"),
    arg("--stage-delay", type=float, metavar="SECONDS", help="dry: each stage takes this long"),
    arg("--run-commands", action="store_true", help="dry: also run the gates' commands"),
    arg("--unattended", only=ODIN, action="store_true",
        help="never wait for a person (cron, CI): refuses a loop `odin validate --schedulable` rejects; "
             "a pause or a block ends the run blocked, report written, exit 3; exit 0 only on done"),
    *WAITING,
)

STEP = (arg("stage", metavar="STAGE", help="the stage to run (a stage id of the run's loop)"), *WAITING)

APPROVE = WAITING

REVISE = (arg("feedback", nargs="+", metavar="FEEDBACK", help="what should change"), *WAITING)

ANSWER = (
    arg("text", nargs="+", metavar="TEXT",
        help="your answer; or: you decide | skip | a number (an offered option) | confirm | merge A, B ..."),
    *WAITING,
)

QUESTION = ()

ABANDON = ()

STATUS = (
    arg("--run", metavar="ID", help="a run id (default: the active or latest run)"),
    arg("--json", only=ODIN, action="store_true", help="print the state.json object"),
    arg("--history", action="store_true",
        help="the whole history, not its last 10 entries (each numbered: the N of revert --to and fork --from)"),
)

RUNS = (arg("--json", only=ODIN, action="store_true", help="print the runs as JSON"),)

REPORT = (
    # the terminal names the run by a positional argument, the notebook by --run (as status does)
    arg("run", only=ODIN, nargs="?", metavar="RUN", help="a run id (default: the active or latest run)"),
    arg("--run", only=MAGIC, metavar="ID", help="a run id (default: the active or latest run)"),
    arg("--open", only=ODIN, action="store_true", help="print the report files' paths, not the report"),
)
