"""Attribution: which of the changes between a stage's checkpoints the stage made.

Scope is about what the stage did, not about what else happened meanwhile. A change the stage's own
tools and commands did not make is **changed outside the run**: never reverted as out of scope, never
blamed on the stage, shown as such in the gate's evidence. Two kinds are recognised (bubblewrap here
cannot capture a sandbox's writes, so attribution is by elimination and errs towards the stage):

* **odin's own output**: a regular file of the project that is this driver's standard output or error
  (``odin run ... > run.log``): the same file (device and inode) as file descriptor 1 or 2.
* **an edit while the stage's tools were idle**: a file that no write or edit tool wrote, whose
  ``st_ctime`` lies inside the stage's tools' lifetime but outside every window in which one of its
  tools or bash commands was active (:mod:`odin_magic.runs.activity`, on the file system's clock, with
  :data:`SLACK_NS` either side). An editor's save or another terminal while the model thinks.

Whenever the record cannot vouch for a change — no record (the dry worker, an interview), a deleted file
(no time to read), a time inside a window or outside the tools' lifetime, a bash command that left a
process running, an unsandboxed shell — the change is the stage's, as it always was.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from odin_magic.runs import activity
from odin_magic.runs.checkpoints import Change

OUTSIDE = "changed outside the run"
DRIVER_OUTPUT = f"{OUTSIDE}: odin's own output"
IDLE = f"{OUTSIDE}: while the stage's tools were idle"

#: How far around each activity window a change still counts as the stage's (file-system clock).
SLACK_NS = 5_000_000


@dataclass(frozen=True)
class Attribution:
    """A stage execution's changes, split: those it made, and those made outside the run (path → why)."""

    stage: list[Change]
    outside: dict[str, str]

    def annotated(self, changes: list[Change]) -> list[dict]:
        """The changes as the gate's evidence lists them: each outside the run says so (``outside``)."""
        return [{**c.to_dict(), "outside": self.outside[c.path]} if c.path in self.outside else c.to_dict()
                for c in changes]


def attribute(changes: list[Change], project_dir: Path, run_dir: Path, stage_id: str) -> Attribution:
    """Split ``changes`` (between the stage execution's checkpoints) into the stage's and the others'."""
    if not changes:  # nothing to split: the driver's outputs and the stage's activity are not looked up
        return Attribution([], {})
    outputs = _driver_outputs()
    record = activity.lookup(run_dir, stage_id)
    mine, outside = [], {}
    for change in changes:
        why = _outside(change, Path(project_dir) / change.path, outputs, record)
        if why is None:
            mine.append(change)
        else:
            outside[change.path] = why
    return Attribution(mine, outside)


def _outside(change: Change, path: Path, outputs: set[tuple[int, int]],
             record: activity.StageActivity | None) -> str | None:
    if change.kind == "deleted":
        return None
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) in outputs:
        return DRIVER_OUTPUT
    if record is None or os.path.realpath(path) in record.written:
        return None
    return IDLE if record.idle_at(st.st_ctime_ns, SLACK_NS) else None


def _driver_outputs() -> set[tuple[int, int]]:
    """The regular files this driver writes its standard output and error to (device, inode)."""
    found = set()
    for fd in (1, 2):
        try:
            st = os.fstat(fd)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            found.add((st.st_dev, st.st_ino))
    return found
