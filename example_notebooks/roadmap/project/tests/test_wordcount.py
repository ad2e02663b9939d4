import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import wordcount  # noqa: E402


def test_a_line_with_its_newline():
    assert wordcount.count_words("one two\n") == 2
