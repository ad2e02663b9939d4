"""A stage execution's diff (:class:`~odin_magic.runs.diffs.StageDiff`) as HTML: one collapsible,
coloured diff per file; as text, the unified diff ``odin diff`` prints."""

from __future__ import annotations

import html

from odin_magic.render.displays import _Display
from odin_magic.runs.diffs import FileDiff, StageDiff

MAX_HTML_LINES = 400  # per file, in the HTML rendering (the text is never cut)


class DiffDisplay(_Display):
    """``%odin diff``: the diff of one stage execution."""

    def __init__(self, diff: StageDiff):
        self.diff = diff

    def text(self) -> str:
        return self.diff.text()

    def html(self) -> str:
        head = (f"<div class='odin-diff'><p><b>{html.escape(self.diff.title)}</b> — "
                f"{len(self.diff.files)} file(s) changed</p>")
        if not self.diff.files:
            return head + "<p class='odin-muted'>no files changed</p></div>"
        return head + "".join(file_html(f) for f in self.diff.files) + "</div>"


def file_html(f: FileDiff) -> str:
    """One file: a collapsible ``<details>`` whose summary names it with its line counts, its diff coloured."""
    c = f.change
    counts = "binary" if c.binary else (f"<span style='color:#2a7d2a'>+{c.added}</span> "
                                        f"<span style='color:#c33'>-{c.deleted}</span>")
    lines = f.text.splitlines(keepends=True)
    shown = "".join(lines[:MAX_HTML_LINES])
    more = f"\n… {len(lines) - MAX_HTML_LINES} more lines (odin diff prints them all)\n" if len(lines) > MAX_HTML_LINES else ""
    outside = f" <i class='odin-muted'>— {html.escape(f.outside)}</i>" if f.outside else ""
    return (f"<details class='odin-diff-file'><summary><code>{html.escape(c.path)}</code> "
            f"<span class='odin-muted'>{c.kind}</span> {counts}{outside}</summary>{highlight(shown + more)}</details>")


def highlight(diff_text: str) -> str:
    """A unified diff as syntax-coloured HTML (pygments' diff lexer, inline styles)."""
    try:
        from pygments import highlight as pyg
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import DiffLexer

        return pyg(diff_text, DiffLexer(), HtmlFormatter(noclasses=True, nobackground=False))
    except ImportError:  # pygments comes with IPython; without it, plain colours by line
        out = []
        for line in diff_text.splitlines():
            colour = "#2a7d2a" if line.startswith("+") else "#c33" if line.startswith("-") else "#333"
            out.append(f"<span style='color:{colour}'>{html.escape(line)}</span>")
        return "<pre>" + "\n".join(out) + "</pre>"
