"""What the notebook tests share: a real IPython shell (no kernel) with the extension loaded."""

from __future__ import annotations

import pytest
from IPython.testing import globalipapp
from IPython.testing.globalipapp import start_ipython


@pytest.fixture(scope="module")
def ip():
    shell = start_ipython() or globalipapp.get_ipython()  # None when another test module started it first
    shell.run_line_magic("load_ext", "odin_magic")
    yield shell
