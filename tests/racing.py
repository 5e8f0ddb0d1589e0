"""A control plane that lets a test run a rival between an enqueue's duplicate check and its insert."""

from analysis_jobs.control_plane import DatabaseControlPlane


class RacingControlPlane(DatabaseControlPlane):
    """A control plane whose first duplicate check is followed, before anything else, by ``interleave``."""

    def __init__(self, interleave, **options):
        super().__init__(**options)
        self.interleave = interleave

    def _active_jobs(self, sources, revision):
        found = super()._active_jobs(sources, revision)
        interleave, self.interleave = self.interleave, None
        if interleave is not None:
            interleave()
        return found
