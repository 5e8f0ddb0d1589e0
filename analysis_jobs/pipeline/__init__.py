"""
The analysis pipeline: named stages that turn a source into a canonical facts document.

The worker owns the job; the pipeline owns the analysis. The worker runs ``pipeline.stages`` in order,
renewing its lease and saving ``stage``/``progress`` at each boundary, and hands every stage a ``check``
callable that a long stage calls between files: it raises (cancelled, lease lost, shutting down) when the job
must stop, and is cheap enough to call often. ``pipeline.document(state)`` then gives the facts to seal.
"""

from .base import AnalysisState, Pipeline, Stage
from .canonical import canonical_json, content_hash
from .inventory import InventoryPipeline


def default_pipeline() -> Pipeline:
    """Return the pipeline a worker runs when it is given none."""
    return InventoryPipeline()


__all__ = ["AnalysisState", "Pipeline", "Stage", "canonical_json", "content_hash", "default_pipeline"]
