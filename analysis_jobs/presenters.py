"""How a job looks to a person or a script: the one JSON shape the commands print."""

from .models import AnalysisJob


def job_as_dict(job: AnalysisJob) -> dict:
    """Return the job's public fields as JSON-ready values."""
    snapshot = job.snapshot
    return {
        "id": job.pk,
        "source": job.source,
        "revision": job.revision,
        "status": job.status,
        "stage": job.stage,
        "progress": job.progress,
        "attempt": job.attempt,
        "max_attempts": job.max_attempts,
        "cancel_requested": job.cancel_requested,
        "worker_id": job.worker_id,
        "error_code": job.error_code,
        "error_message": job.error_message,
        "snapshot_hash": snapshot.content_hash if snapshot is not None and snapshot.content_hash else None,
        "created_at": job.created_at.isoformat() if job.created_at else None,
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "completed_at": job.completed_at.isoformat() if job.completed_at else None,
    }


def job_line(job: AnalysisJob) -> str:
    """Return a one-line human summary of the job."""
    parts = [f"job {job.pk}", job.status, f"stage={job.stage or '-'}", f"progress={job.progress}%",
             f"attempt={job.attempt}/{job.max_attempts}", f"source={job.source}"]
    if job.error_code:
        parts.append(f"error={job.error_code}: {job.error_message}")
    if job.snapshot_id and job.snapshot.content_hash:
        parts.append(f"snapshot={job.snapshot.content_hash}")
    return "  ".join(parts)
