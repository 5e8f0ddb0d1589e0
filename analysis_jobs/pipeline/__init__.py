"""
The analysis pipeline: named stages that turn a source into a canonical facts document.

The worker owns the job; the pipeline owns the analysis. The worker runs ``pipeline.stages`` in order,
renewing its lease and saving ``stage``/``progress`` at each boundary, and hands every stage a ``check``
callable that a long stage calls between files: it raises (cancelled, lease lost, shutting down) when the job
must stop, and is cheap enough to call often. ``pipeline.document(state)`` then gives the facts to seal and
``pipeline.identity(state)`` what makes the analysis reusable; a stage that finds a sealed snapshot with the
same identity raises ``SnapshotReused`` and the worker completes the job with it.
"""

from .base import AnalysisState, Pipeline, SnapshotReused, Stage
from .canonical import canonical_bytes, canonical_json, content_hash
from .repository import RepositoryPipeline


def default_pipeline() -> Pipeline:
    """Return the pipeline a worker runs when it is given none."""
    return RepositoryPipeline()


__all__ = [
    "AnalysisState", "Pipeline", "RepositoryPipeline", "SnapshotReused", "Stage", "canonical_bytes", "canonical_json",
    "content_hash",
    "default_pipeline",
]
