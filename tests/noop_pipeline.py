"""A pipeline with no stages, so a job costs only the queue's own work: claim, lease, seal, complete."""

from analysis_jobs.pipeline import AnalysisState


class NoopPipeline:
    stages = ()

    def document(self, state: AnalysisState) -> dict:
        return {"schema": "noop"}

    def identity(self, state: AnalysisState) -> str:
        return ""


def pipeline() -> NoopPipeline:
    return NoopPipeline()
