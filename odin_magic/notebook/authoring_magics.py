"""``%odin new``, ``%odin refine`` and ``%odin memory``: the notebook side of authoring and learning.

Their arguments are the CLI's (:mod:`odin_magic.commands.authoring`); :data:`COMMANDS`
are the handlers :class:`~odin_magic.notebook.magics.OdinMagics` calls with itself and
the parsed arguments.
"""

from __future__ import annotations

from datetime import datetime
from IPython.display import display

from odin_magic.render.displays import MessageDisplay, TextBlockDisplay
from odin_magic.core.errors import UsageError


def _now() -> str:
    return datetime.now().strftime("%Y-%m-%dT%H:%M:%S")


def cmd_new(magics, args):
    from odin_magic.authoring import new_loop as au

    project = magics.project_dir
    target = au.loop_path(project, args.name)
    if target.exists() and not args.force:
        raise UsageError(f"{target} already exists; %odin new never overwrites a loop",
                         hint="pick another name, or add --force")
    if args.answers:
        path, text = au.write_loop(project, args.name, au.load_answers(project / args.answers), force=args.force)
        return TextBlockDisplay(f"{text.rstrip()}\n\nwrote {path.relative_to(project.resolve())}\n"
                                f"start it: %odin run {args.name} --task \"...\"  (add --dry to try it offline)")
    proposal = None
    if args.describe:
        settings = magics.settings()
        if au.model_configured(settings):
            proposal = au.propose_answers(" ".join(args.describe), settings, au.proposal_client_factory(settings, project))
    if not magics.use_widgets():
        from odin_magic.authoring.terminal import TerminalInterview, input_line

        path, text = TerminalInterview(input_line, print).run(project, args.name, proposal, args.force)
        return TextBlockDisplay(f"{text.rstrip()}\n\nwrote {path}\nstart it: %odin run {args.name} --task \"...\"")
    from odin_magic.notebook.new_loop_form import NewLoopForm

    return NewLoopForm(project, args.name, proposal, force=args.force)


def cmd_refine(magics, args):
    from odin_magic.learning.refine import Refinements, refine
    from odin_magic.notebook.refine_panel import proposal_panel
    from odin_magic.render.refine_view import RefineDisplay, proposals_text

    words = list(args.words)
    refinements = Refinements(magics.project_dir)
    if words[:1] in (["apply"], ["reject"]):
        if len(words) != 2:
            raise UsageError(f"usage: %odin refine {words[0]} ID", hint="`%odin refine list` shows the proposal ids")
        return TextBlockDisplay(_decide(refinements, words[0], words[1]))
    if words[:1] == ["list"]:
        if len(words) > 2:
            raise UsageError("usage: %odin refine list [LOOP]")
        proposals = refinements.all(words[1] if len(words) == 2 else None)
        if args.json:
            return [p.model_dump(mode="json") for p in proposals]
        return TextBlockDisplay(proposals_text(proposals))  # `odin refine list`'s text
    if len(words) > 1:
        raise UsageError("usage: %odin refine [LOOP]  (or: apply ID, reject ID, list [LOOP])")
    settings = factory = None
    if args.model:
        from odin_magic.authoring.new_loop import model_for_refine

        settings, factory = model_for_refine(magics.project_dir, magics.settings())
    result = refine(magics.project_dir, words[0] if words else None, settings=settings, client_factory=factory)
    if args.json:
        return result.model_dump(mode="json")
    if not magics.use_widgets():
        return RefineDisplay(result)
    display(RefineDisplay(result))
    for proposal in [*result.proposals, *result.still_open]:
        display(proposal_panel(proposal, lambda pid: _decide(refinements, "apply", pid),
                               lambda pid: _decide(refinements, "reject", pid)))
    return None


def _decide(refinements, action: str, proposal_id: str) -> str:
    from odin_magic.render.refine_view import decided_text

    if action == "apply":
        proposal, path = refinements.apply(proposal_id, _now())
        return decided_text(proposal, path, refinements.history_dir)
    return decided_text(refinements.reject(proposal_id, _now()))


def cmd_memory(magics, args):
    from odin_magic.learning.memory import Memory
    from odin_magic.render.loop_text import memory_text

    mem = Memory(magics.project_dir)
    words = list(args.words)
    if words[:1] == ["remove"] and len(words) == 2:
        entry = mem.remove(words[1])
        return MessageDisplay(f"removed {entry.id} ({entry.kind}, stage {entry.stage}, run {entry.run_id})")
    if words == ["clear"]:
        if not args.force:
            raise UsageError(f"clear deletes {len(mem.entries())} memory entries", hint="add --force")
        return MessageDisplay(f"cleared {mem.clear()} entries")
    if words:
        raise UsageError("usage: %odin memory [remove ID | clear --force]")
    return TextBlockDisplay(memory_text(mem.dir, mem.entries()))  # `odin memory`'s text


COMMANDS = {"new": cmd_new, "refine": cmd_refine, "memory": cmd_memory}
