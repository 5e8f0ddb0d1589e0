"""
The failures a job can end with. Each carries the code stored on the job (``error_code``) and says whether
another attempt could help; the message stored beside it is the exception's text, which never quotes file
contents.
"""


class AnalysisError(Exception):
    """The analysis failed."""

    code = "RI-JOB-FAILED"
    retryable = True

    def __init__(self, message: str | None = None):
        super().__init__(message or self.__class__.__doc__)

    @property
    def message(self) -> str:
        return str(self.args[0])


class SourceNotFound(AnalysisError):
    """The source path does not exist, is not a directory or cannot be read."""

    code = "RI-SOURCE-NOT-FOUND"
    retryable = False


class RevisionNotFound(AnalysisError):
    """The revision does not name a commit in the source repository, or one that holds the source folder."""

    code = "RI-REVISION-NOT-FOUND"
    retryable = False


class ResourceExceeded(AnalysisError):
    """The source is larger than the analysis budget allows."""

    code = "RI-RESOURCE-EXCEEDED"
    retryable = False


class JobCancelled(Exception):
    """Cancellation was requested; the worker stops at this checkpoint."""

    code = "RI-JOB-CANCELLED"


class LeaseLost(Exception):
    """The worker no longer owns the job; it must stop and write nothing more."""


class CancelRefused(Exception):
    """The job cannot be cancelled (it is already finished, or does not exist)."""


ERROR_CODES = {
    "RI-JOB-FAILED": "an attempt raised an error and the attempt budget is spent",
    "RI-JOB-STALE": "the worker stopped renewing its lease (crash, kill, hang) and the sweep took the job back",
    "RI-JOB-CANCELLED": "cancellation was requested and honoured",
    SourceNotFound.code: SourceNotFound.__doc__,
    RevisionNotFound.code: RevisionNotFound.__doc__,
    ResourceExceeded.code: ResourceExceeded.__doc__,
}
