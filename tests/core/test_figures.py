"""Figures read from a command's output (issue 23): regex or JSON, finite numbers only, median and spread."""

from __future__ import annotations

import pytest

from odin_magic.core.figures import NoFigure, amount, by_json, by_regex, finite, median_and_spread


def test_the_regex_group_of_the_last_match():
    assert by_regex(r"took ([0-9.]+) ms", "took 12 ms\ntook 10.5 ms\n") == 10.5
    assert by_regex(r"time: ([0-9.]+)", "", "time: 3\n") == 3  # stderr when stdout has none


def test_no_match_quotes_the_output_tail():
    with pytest.raises(NoFigure, match=r"the regex 'p95 \(\[0-9\]\+\)' matched nothing in: …x+ ⏎ the end$"):
        by_regex(r"p95 ([0-9]+)", "x" * 1000 + "\nthe end\n")
    with pytest.raises(NoFigure, match=r"matched nothing in: \(no output\)"):
        by_regex(r"p95 ([0-9]+)", "")


@pytest.mark.parametrize("text, words", [("nan", "nan, not a finite number"), ("inf", "inf, not a finite number"),
                                         ("-inf", "-inf, not a finite number"), ("", "empty"),
                                         ("fast", "'fast', not a number")])
def test_what_is_not_a_finite_number_is_refused(text, words):
    with pytest.raises(NoFigure, match=words):
        finite(text, "the figure")
    with pytest.raises(NoFigure, match="not a"):
        by_regex(r"figure=(\S*)", f"figure={text}\n")


def test_a_path_into_json_on_stdout():
    assert by_json("latency.p95", '{"latency": {"p95": 151.5}}') == 151.5
    assert by_json("runs.1.ms", 'warming up\n{"runs": [{"ms": 3}, {"ms": 4}]}\n') == 4
    for out, words in [('{"latency": {}}', "nothing at 'latency.p95'"), ("no json here", "no JSON on stdout"),
                       ('{"latency": {"p95": NaN}}', "not a finite number"),
                       ('{"latency": {"p95": true}}', "not a number")]:
        with pytest.raises(NoFigure, match=words):
            by_json("latency.p95", out)


def test_median_spread_and_amounts():
    assert median_and_spread([3.0, 1.0, 2.0]) == (2.0, 2.0)
    assert median_and_spread([5.0]) == (5.0, 0.0)
    assert amount("2%", -200.0) == 4.0 and amount(3, 200.0) == 3.0 and amount(None, 1.0) == 0.0
