"""odin-magic: run AI development-workflow loops, defined as YAML data, from a notebook."""

__version__ = "0.1.0"

from . import _moved

_moved.install()


def load_ipython_extension(ipython):  # pragma: no cover - wired in by the notebook front end
    from odin_magic.notebook.magics import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython):  # pragma: no cover
    from odin_magic.notebook.magics import unload_ipython_extension as _unload

    _unload(ipython)
