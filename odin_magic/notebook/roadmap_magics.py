"""``%odin roadmap``: the roadmap with progress bars, its validation, and a proposed roadmap with Accept /
Discard (docs/roadmap.md).

Its arguments are the CLI's (:mod:`odin_magic.commands.roadmap`); a proposal of ``roadmap new`` waits in
``.odin-loop/roadmap.proposed.md`` until Accept (or ``%odin roadmap accept``) writes it as the roadmap."""

from __future__ import annotations

import html

from odin_magic.render.displays import MessageDisplay, TextBlockDisplay


def cmd_roadmap(magics, args):
    from odin_magic.commands.roadmap import check_options

    check_options(args, "%odin")
    from odin_magic.notebook.roadmap_run import cmd_roadmap_run

    handler = {"show": _show, "new": _new, "validate": _validate, "run": cmd_roadmap_run, "accept": _accept,
               "discard": _discard}
    return handler[args.action](magics, args)


def _show(magics, args):
    from odin_magic.render.roadmap_view import roadmap_display

    return roadmap_display(magics.project_dir)


def _validate(magics, args):
    from odin_magic.loop.roadmap import ROADMAP_FILE, check_roadmap_file
    from odin_magic.render.roadmap_view import roadmap_validation_text
    from odin_magic.notebook.project import abs_path

    shown = args.file or str(magics.project_dir / ROADMAP_FILE)
    roadmap, diags = check_roadmap_file(abs_path(shown, magics.project_dir), shown)
    return TextBlockDisplay(roadmap_validation_text(shown, diags, roadmap))


def _new(magics, args):
    from odin_magic.authoring import roadmap_new as rn
    from odin_magic.loop.roadmap import ROADMAP_FILE
    from odin_magic.render.roadmap_view import proposal_text

    project = magics.project_dir
    rn.refuse_overwrite(project, args.force, "%odin roadmap new")
    source = rn.source_of(project, spec=args.from_spec, run=args.from_run, answers=args.answers)
    settings, factory = rn.model_for_roadmap(project, magics.settings())
    text = rn.propose_roadmap(source, settings, factory)
    rn.save_proposal(project, text)
    shown = proposal_text(text, ROADMAP_FILE)
    if not magics.use_widgets():
        return TextBlockDisplay(f"{shown}\n\naccept it: %odin roadmap accept   (or: %odin roadmap discard)")
    return proposal_panel(shown, lambda: _accepted(project, args.force), lambda: _discarded(project))


def _accepted(project, force: bool) -> str:
    from odin_magic.authoring.roadmap_new import accept_proposal

    return f"wrote {accept_proposal(project, force)}; show it: %odin roadmap"


def _discarded(project) -> str:
    from odin_magic.authoring.roadmap_new import discard_proposal

    discard_proposal(project)
    return "discarded: nothing written"


def _accept(magics, args):
    return MessageDisplay(_accepted(magics.project_dir, args.force))


def _discard(magics, args):
    return MessageDisplay(_discarded(magics.project_dir))


def proposal_panel(shown: str, accept, discard):
    """The proposed roadmap with Accept and Discard; each returns the message shown under the buttons."""
    import ipywidgets as w

    text = w.HTML(f"<pre>{html.escape(shown)}</pre>")
    accept_button = w.Button(description="Accept", button_style="success", tooltip="write it as the roadmap")
    discard_button = w.Button(description="Discard", button_style="danger", tooltip="drop the proposal")
    status = w.HTML("")
    box = w.VBox([text, w.HBox([accept_button, discard_button]), status])
    box.add_class("odin-roadmap-proposal")

    def decide(action):
        def click(_):
            try:
                message = action()
            except Exception as exc:  # an OdinError (a roadmap appeared meanwhile) is shown, never raised
                message = f"refused: {getattr(exc, 'message', exc)}"
            else:
                accept_button.disabled = discard_button.disabled = True
            status.value = html.escape(message)
        return click

    accept_button.on_click(decide(accept))
    discard_button.on_click(decide(discard))
    box.accept_button, box.discard_button, box.status = accept_button, discard_button, status
    return box
