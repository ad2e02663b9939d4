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
    import os

    from odin_magic.notebook.project import notebook_dir
    from odin_magic.render.roadmap_view import roadmap_display

    shown = roadmap_display(magics.project_dir)
    base = os.path.relpath(magics.project_dir, notebook_dir(magics.shell))
    shown.href_base = "" if base == "." else base.replace(os.sep, "/")  # a report's link from the notebook
    if magics.charts:
        from odin_magic.render.roadmap_chart import roadmap_chart_png

        shown.chart_png = roadmap_chart_png(magics.project_dir, shown.roadmap)
    return shown


def _validate(magics, args):
    from odin_magic.render.roadmap_view import validate_roadmap

    return TextBlockDisplay(validate_roadmap(magics.project_dir, args.file)[0])


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
    return proposal_panel(_proposal_html(text, shown), lambda: _accepted(project, args.force),
                          lambda: _discarded(project))


def _proposal_html(text: str, shown: str) -> str:
    """The proposal as the roadmap view draws it, its Markdown below (folded)."""
    from odin_magic.loop.roadmap import parse_roadmap
    from odin_magic.render.roadmap_view import RoadmapDisplay, roadmap_rows

    roadmap, _ = parse_roadmap(text, "the proposal")  # it parses: roadmap_markdown checked it
    head = html.escape(shown.split("\n", 1)[0])
    view = RoadmapDisplay(roadmap, roadmap_rows(roadmap), where="proposed")._repr_html_() if roadmap else ""
    return (f"<p><b>{head}</b></p>{view}<details><summary>roadmap.md</summary>"
            f"<pre>{html.escape(text)}</pre></details>")


def _accepted(project, force: bool) -> str:
    from odin_magic.authoring.roadmap_new import accept_proposal

    return f"wrote {accept_proposal(project, force, '%odin roadmap accept')}; show it: %odin roadmap"


def _discarded(project) -> str:
    from odin_magic.authoring.roadmap_new import discard_proposal

    discard_proposal(project)
    return "discarded: nothing written"


def _accept(magics, args):
    return MessageDisplay(_accepted(magics.project_dir, args.force))


def _discard(magics, args):
    return MessageDisplay(_discarded(magics.project_dir))


def proposal_panel(page: str, accept, discard):
    """The proposed roadmap (``page``: HTML) with Accept and Discard; each returns the message shown under the
    buttons."""
    import ipywidgets as w

    text = w.HTML(page)
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
