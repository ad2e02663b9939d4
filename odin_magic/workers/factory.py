"""The worker a real (not dry) run uses when none is given: Claude, or the scripted model offline."""

from __future__ import annotations

from pathlib import Path

from odin_magic.workers.config import Settings
from odin_magic.workers.base import Worker


def locate_script(script: Path | str, project_dir: Path) -> Path:
    """Where a scripted-model path points: relative paths are looked up in the project, then the cwd."""
    path = Path(script).expanduser()
    if not path.is_absolute() and (Path(project_dir) / path).is_file():
        return Path(project_dir) / path
    return path


def make_worker(settings: Settings, project_dir: Path) -> Worker:
    """Build the worker for ``settings``.

    ``settings.script`` set: the Claude worker over the offline scripted model
    (see :func:`locate_script`; the replay position is kept in each run's dir).
    Otherwise the Claude worker over the Anthropic API; a missing API key
    raises :class:`~odin_magic.core.errors.ConfigError` here, before any stage starts.
    """
    from odin_magic.workers.claude import ClaudeWorker, require_credentials
    from odin_magic.workers.client import default_client_factory

    if settings.script is not None:
        from odin_magic.workers.scripted import ScriptedModel

        model = ScriptedModel.from_file(locate_script(settings.script, project_dir), project_dir=Path(project_dir))
        factory = model.client_factory(max_retries=settings.max_retries)
    else:
        require_credentials(settings)
        factory = default_client_factory(settings)
    return ClaudeWorker(settings, client_factory=recorded(factory, settings, project_dir))


def recorded(factory, settings: Settings, project_dir: Path):
    """``factory``, its clients recording every exchange when ``settings.record`` (``ODIN_RECORD``) is set."""
    if settings.record is None:
        return factory
    from odin_magic.workers.recording import recording_factory

    return recording_factory(factory, settings.record, Path(project_dir))
