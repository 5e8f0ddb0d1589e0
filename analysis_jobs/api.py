"""
The Python API for other Django apps: queue an analysis, cancel it, read it. The commands, the admin and the
HTTP API go through the same control plane, so a job queued here is claimed, leased and retried like any other.

    from analysis_jobs import api
    job, created = api.enqueue("/srv/repos/shop", revision="main", owner=request.user)
    api.cancel(job.pk, by=request.user.username)
    api.get(job.pk).status

Connect to ``analysis_jobs.signals`` to hear when a job finishes.
"""

import os

from django.conf import settings

from .control_plane import CancelOutcome, DatabaseControlPlane
from .exceptions import AnalysisError
from .models import AnalysisJob
from .pipeline.config import PipelineConfig
from .pipeline.repository import identity_for_revision
from .pipeline.sources import resolve_revision


class SourceRefused(ValueError):
    """The source cannot be queued; the message says why (nothing was queued)."""

    def __init__(self, message: str, code: str = "invalid-source"):
        super().__init__(message)
        self.code = code


def checked_source(path: str, roots=None) -> str:
    """Return ``path`` as the job stores it (its real path), or raise ``SourceRefused`` with the reason.

    With ``roots``, the real path must be one of them or lie under one: a client of the HTTP API names sources
    only there, and a symlink out of a root is followed before the check, so it cannot reach outside.
    """
    if not os.path.exists(path):
        raise SourceRefused(f"{path}: no such file or directory", "source-not-found")
    if not os.path.isdir(path):
        raise SourceRefused(f"{path}: not a directory")
    if not os.access(path, os.R_OK | os.X_OK):
        raise SourceRefused(f"{path}: permission denied")
    source = os.path.realpath(path)
    shown = os.fsencode(source).decode("utf-8", errors="backslashreplace")
    if shown != source:
        # The job stores its source as text: a name that is not UTF-8 could be neither stored nor found again.
        raise SourceRefused(f"{shown}: the path is not valid UTF-8; rename it to queue it")
    limit = AnalysisJob._meta.get_field("source").max_length
    if len(source) > limit:
        raise SourceRefused(f"{source[:60]}...: the path is longer than {limit} characters")
    if roots is not None and not any(_within(source, os.path.realpath(root)) for root in roots):
        raise SourceRefused(f"{path}: not under an allowed source root", "source-outside-roots")
    return source


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def enqueue(source: str, *, revision: str = "", owner=None, max_attempts: int | None = None, roots=None):
    """Queue an analysis of ``source`` (at ``revision``, if given); return ``(job, created)``, as
    ``get_or_create`` does.

    A source and revision with a job already queued or running return that job, not created; a revision whose commit was
    analysed already returns a job completed at once on that snapshot. Raises ``SourceRefused`` for a source that
    cannot be read or lies outside ``roots``, and ``AnalysisError`` (``RevisionNotFound``...) for a revision that
    names no commit there.
    """
    source = checked_source(source, roots)
    revision = revision.strip()
    commit = resolve_revision(source, revision) if revision else ""
    identity = identity_for_revision(source, commit, PipelineConfig.from_settings()) if commit else ""
    return DatabaseControlPlane().enqueue(
        source, revision=revision, owner=owner, max_attempts=max_attempts, commit=commit, reuse_identity=identity,
    )


def cancel(job_id: int, *, by: str = "") -> CancelOutcome:
    """Cancel a queued job at once or ask a running one's worker to stop; raises ``CancelRefused`` if finished or absent."""
    return DatabaseControlPlane().request_cancel(job_id, by=by)


def get(job_id: int) -> AnalysisJob:
    """Return the job (with its snapshot); raises ``AnalysisJob.DoesNotExist``."""
    return AnalysisJob.objects.select_related("snapshot").get(pk=job_id)


def source_roots() -> list[str]:
    """The configured ``ANALYSIS_SOURCE_ROOTS``, the only folders the HTTP API queues from (none when unset)."""
    return list(settings.ANALYSIS_JOBS.get("SOURCE_ROOTS") or ())


__all__ = ["AnalysisError", "SourceRefused", "cancel", "checked_source", "enqueue", "get", "source_roots"]
