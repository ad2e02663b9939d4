"""The words a newcomer meets in odin's help and output are explained (issue 18 item 11)."""

from __future__ import annotations

from odin_magic.cli import main
from support import REPO

TERMS = ("ai-pending", "loopback", "kill ratio", "Muninn", "Huginn", "seven questions", "stage execution",
         "scope", "checkpoint", "blocked", "ready", "dry run", "scripted model")


def test_the_glossary_explains_every_term_and_the_readme_points_at_it():
    glossary = (REPO / "docs" / "glossary.md").read_text(encoding="utf-8")
    missing = [t for t in TERMS if f"**{t}" not in glossary and f", {t}" not in glossary and f"({t}" not in glossary]
    assert missing == []
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "docs/glossary.md" in readme and "%odin help new" in readme


def test_help_texts_name_no_seed_document(capsys):
    for argv in (["--help"], ["new", "--help"], ["refine", "--help"]):
        try:
            main(argv)
        except SystemExit:
            pass
        out = capsys.readouterr().out
        assert "seed 000" not in out and "Muninn:" not in out  # the term is explained, never a label
