"""What happens when a drive leaves its run ended: the loop's ``deliver:`` (``branch`` or ``pr``) for a run that
ended done, then the run's report — both while the run is still locked, and neither ever fatal to the run.

A delivery that fails (no git repository, the branch exists, nothing deliverable, gh failing ...) leaves the run
done: the failure is recorded in the event log (a ``notice`` record, ``about: delivery``) and told as a notice,
with ``odin deliver`` as the way to try again (docs/delivery.md, "deliver: in a loop").
"""

from __future__ import annotations

from odin_magic.core.errors import OdinError
from odin_magic.engine.session import Session
from odin_magic.render import run_report as runreport
from odin_magic.runs.records import RecordType

#: the ``about`` of the notice record a delivery at done leaves in the event log
DELIVERY_NOTICE = "delivery"


def finish(engine, s: Session) -> None:
    """At the end of a drive: deliver a run that ended done when its loop says so, then write the report."""
    if s.state is None or s.state.status not in runreport.END_STATUSES:
        return
    if s.state.status == "done" and s.state.dry is None and getattr(s.loop, "deliver", "off") != "off":
        deliver_at_done(engine, s)
    if engine.reports:
        write_report(engine, s)


def deliver_at_done(engine, s: Session) -> None:
    """``deliver: branch | pr``: the run as a branch (and, ``pr``, pushed and a pull request); recorded and told."""
    from odin_magic.engine.delivery import DeliverOptions, deliver  # git: only for a loop that delivers
    from odin_magic.render.delivery_text import delivery_text

    mode = s.loop.deliver
    try:
        # pr: a pull request needs the branch on the remote, so it is pushed first (`odin deliver --push --pr`)
        result = deliver(engine, s.state.run_id, DeliverOptions(pr=mode == "pr", push=mode == "pr"), state=s.state)
    except Exception as exc:  # noqa: BLE001 - a delivery never turns a done run into a crash
        why = exc.message if isinstance(exc, OdinError) else repr(exc)
        hint = f" ({exc.hint})" if isinstance(exc, OdinError) and exc.hint else ""
        line = f"delivery ({mode}) failed: {why}{hint}; the run stays done: `odin deliver {s.state.run_id}` tries again"
        _tell(engine, s, "notice", line, {"ok": False, "mode": mode, "error": why})
        return
    data = {"ok": True, "mode": mode, "branch": result.branch, "commits": [c for c, _ in result.commits],
            "pr_path": result.pr_path}
    if result.pr_text:
        data["pr"] = result.pr_text
    _tell(engine, s, "delivered", "delivered: " + delivery_text(result).replace("\n", "\n  "), data)


def _tell(engine, s: Session, kind: str, line: str, data: dict) -> None:
    """Recorded in the event log (a notice record) and told (``delivered``, or a ``notice`` for a failure)."""
    try:
        engine._record(s, RecordType.NOTICE, save=True, text=line, about=DELIVERY_NOTICE, delivery=data)  # noqa: SLF001
    except (OSError, OdinError) as exc:  # the log could not take it: still told
        line += f" (not recorded: {exc})"
    engine._emit(kind, s.state, text=line, data={"about": DELIVERY_NOTICE, **data})  # noqa: SLF001


def write_report(engine, s: Session) -> None:
    """The run's report (see runreport); a failure to write it is told, never fatal to the run."""
    try:
        path = runreport.write_report(s.state, s.loop, s.handle.run_dir)
    except Exception as exc:  # noqa: BLE001 - a report must not break a run that has ended
        engine._emit("notice", s.state, text=f"the run's report could not be written: {exc!r}")  # noqa: SLF001
        return
    engine._emit("report", s.state, text=f"report: {path} (and {path.with_suffix('.ipynb').name})",  # noqa: SLF001
                 data={"path": str(path)})
