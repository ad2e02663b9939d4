"""Start-up imports only what a command uses: `odin --help` and `%load_ext odin_magic` load no engine,
no models, no interview (their cost is measured by benchmarks/bench_engine.py, not asserted here)."""

from __future__ import annotations

import json
import subprocess
import sys

#: What neither `odin --help` nor `%load_ext` needs: the engine and the run store, the loop and state
#: models (pydantic), YAML, the interview, the validator, the model SDK, charts and widgets.
HEAVY = ("odin_magic.engine.orchestrator", "odin_magic.runs.store", "odin_magic.loop.schema", "odin_magic.runs.state", "odin_magic.loop.validation",
         "odin_magic.loop.catalog", "odin_magic.interview.session", "odin_magic.interview.runner",
         "odin_magic.interview.models", "pydantic", "yaml", "anthropic", "matplotlib", "ipywidgets")


def loaded_after(code: str) -> list[str]:
    """The heavy modules a fresh interpreter has loaded after running ``code``."""
    probe = code + "\nimport json, sys\nprint(json.dumps(sorted(m for m in sys.modules if m in %r)))" % (HEAVY,)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return json.loads(out.splitlines()[-1])


def test_odin_help_loads_nothing_heavy():
    code = ("import sys\nfrom odin_magic.cli import main\nsys.argv = ['odin', '--help']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass")
    assert loaded_after(code) == []


def test_a_command_help_loads_nothing_heavy():
    code = ("from odin_magic.cli import main\n"
            "for cmd in ('run', 'status', 'validate', 'answer'):\n"
            "    try:\n        main([cmd, '--help'])\n    except SystemExit:\n        pass")
    assert loaded_after(code) == []


def test_load_ext_loads_nothing_heavy():
    code = ("from IPython.core.interactiveshell import InteractiveShell\n"
            "ip = InteractiveShell.instance()\nip.run_line_magic('load_ext', 'odin_magic')\n"
            "assert 'odin' in ip.magics_manager.magics['line']")
    assert loaded_after(code) == []


def test_a_command_loads_what_it_uses(tmp_path):
    """Laziness does not break a command: `odin status` on an empty project loads the engine and says so."""
    done = subprocess.run([sys.executable, "-m", "odin_magic", "status", "--project", str(tmp_path)],
                          capture_output=True, text=True)
    assert done.returncode == 1 and "no runs in" in done.stderr



def test_odin_status_loads_no_model_sdk_and_no_charts(tmp_path):
    """`odin status` reads a run and prints it: it needs the engine, never the model SDK (over a second of
    imports on a loaded machine), matplotlib or widgets."""
    code = ("from odin_magic.cli import main\n"
            f"try:\n    main(['status', '--project', {str(tmp_path)!r}])\nexcept SystemExit:\n    pass")
    loaded = loaded_after(code)
    assert "odin_magic.engine.orchestrator" in loaded  # it did load what it uses
    assert not {"anthropic", "matplotlib", "ipywidgets"} & set(loaded), loaded
