"""``redact_cut``: a secret's exact value, and any piece of 16 or more characters of it at a cut edge, redacted."""

from __future__ import annotations

import os

import pytest

from odin_magic.core.commands import TAIL_CHARS, run_command
from odin_magic.core.secrets import FRAGMENT_LENGTH, redact_cut
from odin_magic.loop.schema import GateCommand

KEY = "sk-ant-api03-0123456789abcdefghijklmnopqrstuvwxyz"
TOKEN = "project-db-password-0123456789"
FOUND = [(KEY, "ANTHROPIC_API_KEY"), (TOKEN, "PROJECT_DB")]
MARK = "[redacted ANTHROPIC_API_KEY]"


def clean(text: str) -> str:
    return redact_cut(text, FOUND)


@pytest.mark.parametrize("n", [FRAGMENT_LENGTH, 24, len(KEY) - 1])
def test_the_end_of_a_key_at_the_start_of_a_text_is_redacted(n: int):
    assert clean(KEY[-n:] + "\nrest of the output") == MARK + "\nrest of the output"


@pytest.mark.parametrize("n", [FRAGMENT_LENGTH, 30, len(KEY) - 1])
def test_the_start_of_a_key_at_the_end_of_a_text_is_redacted(n: int):
    assert clean("the output\n" + KEY[:n]) == "the output\n" + MARK


def test_pieces_beside_the_sdk_cut_marks_are_redacted():
    assert clean("[output truncated]\n" + KEY[-20:] + " more") == "[output truncated]\n" + MARK + " more"
    grep = "a.py:1:x = '" + KEY[:25] + "\n[output truncated at 102400 bytes]"
    assert clean(grep) == "a.py:1:x = '" + MARK + "\n[output truncated at 102400 bytes]"
    head = "x = '" + KEY[:30] + "\n\n... [12 lines truncated] Full output saved to: /tmp/o.txt"  # bash, anthropic 2.16
    assert clean(head) == "x = '" + MARK + "\n\n... [12 lines truncated] Full output saved to: /tmp/o.txt"


def test_a_piece_shorter_than_the_limit_or_away_from_an_edge_is_left():
    short = KEY[-(FRAGMENT_LENGTH - 1):]
    assert clean(short + " tail") == short + " tail"
    inside = "before " + KEY[10:40] + " after"  # not where a text was cut
    assert clean(inside) == inside


def test_whole_secrets_and_pieces_of_several_secrets_go_together():
    text = TOKEN[-18:] + " uses " + KEY + " and ends with " + KEY[:16]
    assert clean(text) == "[redacted PROJECT_DB] uses " + MARK + " and ends with " + MARK


def test_a_text_that_is_only_a_piece_is_redacted_once():
    assert clean(KEY[:30]) == MARK and clean(KEY[-30:]) == MARK
    # a middle piece (a text cut at both ends: no tool of the SDK does that) is not recognised
    assert clean(KEY[5:40]) == KEY[5:40]


def test_containers_and_an_untouched_text_come_back_as_they_were():
    blocks = [{"type": "text", "text": KEY[-20:] + " x"}, {"type": "image", "source": {"data": "abc"}}]
    assert redact_cut(blocks, FOUND)[0]["text"] == MARK + " x"
    plain = {"text": "nothing secret here"}
    assert redact_cut(plain, FOUND) is plain
    assert redact_cut("anything", []) == "anything"


def test_a_command_tail_cut_through_a_key_keeps_no_piece_of_it(tmp_path, monkeypatch):
    """A gate command's evidence keeps the tail of its output, read from a byte offset: the offset may fall in a
    key, and after a run of 4-byte characters the piece left there survives the cut to ``TAIL_CHARS``."""
    key = "sk-ant-api03-" + "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" * 2  # as long as a real one
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    (tmp_path / "key.txt").write_text(key)
    left = 100  # bytes of the key after the offset the tail is read from: a quarter of them would be kept
    wide = (TAIL_CHARS * 4 - left) // 4  # then characters of 4 bytes up to the end
    (tmp_path / "wide.txt").write_text("\U0001F600" * wide, encoding="utf-8")
    env = {**os.environ, "ODIN_RUN_DIR": str(tmp_path)}
    ev = run_command(GateCommand(cmd="cat key.txt wide.txt"), tmp_path, env)
    assert ev.ok and ev.stdout_tail.endswith("\U0001F600")
    assert [key[i:i + FRAGMENT_LENGTH] for i in range(len(key) - FRAGMENT_LENGTH + 1)
            if key[i:i + FRAGMENT_LENGTH] in ev.stdout_tail] == []


def test_redact_takes_a_piece_beside_a_cut_mark_wherever_the_text_is_recorded():
    """Every choke point's :func:`redact` (the event log, thread.json, each request) catches a piece beside a
    cut mark: odin's ``…`` and the judge context's marker, as well as the SDK's."""
    from odin_magic.core.secrets import redact

    line = "bash: echo " + KEY[:20] + "…"
    assert redact(line, FOUND) == "bash: echo " + MARK + "…"
    assert redact("…\n" + KEY[-17:] + " rest", FOUND) == "…\n" + MARK + " rest"
    judge = "x = '" + KEY[:33] + "\n[… 120 more characters cut: budget 48000]"
    assert redact(judge, FOUND) == "x = '" + MARK + "\n[… 120 more characters cut: budget 48000]"
    artifact = "KEY=" + KEY[:40] + "\n… (truncated; 70000 chars in total, read the rest with the read tool)"
    assert redact(artifact, FOUND).startswith("KEY=" + MARK + "\n… (truncated;")
    away = KEY[:20] + " is not beside a mark…"  # at the start, but redact does not look at the ends
    assert redact(away, FOUND) == away
