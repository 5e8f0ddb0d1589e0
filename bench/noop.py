"""A pipeline with no stages: a job then costs only the queue's own work (claim, lease, seal, complete).

``runworker`` processes pick it up through ``ANALYSIS_PIPELINE=bench.noop.pipeline``.
"""


class NoopPipeline:
    stages = ()

    def document(self, state) -> dict:
        return {"schema": "noop"}

    def identity(self, state) -> str:
        return ""


def pipeline() -> NoopPipeline:
    return NoopPipeline()
