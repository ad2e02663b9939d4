"""The worker a real (not dry) run uses when none is given: Claude, or the scripted model offline."""

from __future__ import annotations

from pathlib import Path

from ..config import Settings
from .base import Worker


def make_worker(settings: Settings, project_dir: Path) -> Worker:
    """Build the worker for ``settings``.

    ``settings.script`` set: the Claude worker over the offline scripted model
    (a relative script path is looked up in ``project_dir``, then the current directory). Otherwise the
    Claude worker over the Anthropic API; a missing API key raises
    :class:`~odin_magic.errors.ConfigError` here, before any stage starts.
    """
    from .claude import ClaudeWorker, require_credentials

    if settings.script is not None:
        from .scripted import ScriptedModel

        script = Path(settings.script).expanduser()
        if not script.is_absolute() and (Path(project_dir) / script).is_file():
            script = Path(project_dir) / script
        model = ScriptedModel.from_file(script, project_dir=Path(project_dir))
        return ClaudeWorker(settings, client_factory=model.client_factory(max_retries=settings.max_retries))
    require_credentials(settings)
    return ClaudeWorker(settings)
