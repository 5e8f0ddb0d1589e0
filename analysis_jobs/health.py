"""
What an operator asks of the queue: is it healthy, and why is this job not moving?

Every figure is read with the queries the indexes were made for: per status from the list index, the queued
ones through the claim index, the running ones through the lease index, recent failures through the
error-code index. Workers are seen through the leases they hold: a worker renews its job's lease while it lives,
so one whose lease lapsed is reported gone.
"""

import datetime as dt

from django.db.models import Count, Min, Q

from .models import AnalysisJob, JobStatus


def _eligible(now: dt.datetime) -> Q:
    return Q(status=JobStatus.QUEUED) & (Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))


def _seconds(delta: dt.timedelta) -> int:
    return max(0, round(delta.total_seconds()))


def _when(moment: dt.datetime) -> str:
    return moment.isoformat(timespec="seconds")


def why_not_running(job: AnalysisJob, now: dt.datetime, using: str = "default") -> str:
    """Return, in plain words, what the job is waiting for (or what became of it)."""
    jobs = AnalysisJob.objects.using(using)
    spent = f"{job.attempt} of {job.max_attempts} attempts spent"
    if job.status == JobStatus.QUEUED:
        if job.next_attempt_at is not None and job.next_attempt_at > now:
            after = f" after {job.error_code}" if job.error_code else ""
            return f"In backoff until {_when(job.next_attempt_at)}{after} ({spent})."
        ahead = jobs.filter(_eligible(now)).filter(
            Q(created_at__lt=job.created_at) | Q(created_at=job.created_at, pk__lt=job.pk)
        ).count()
        waiting = f"Waiting behind {ahead} older eligible job{'s' if ahead != 1 else ''} ({spent})."
        if not jobs.filter(status=JobStatus.RUNNING, lease_expires_at__gt=now).exists():
            oldest = jobs.filter(_eligible(now)).aggregate(oldest=Min("created_at"))["oldest"] or job.created_at
            return (
                f"{waiting} No worker holds a live lease and the oldest eligible job has waited "
                f"{_seconds(now - oldest)} s, so no worker is claiming: is a runworker up?"
            )
        return waiting
    if job.status == JobStatus.RUNNING:
        lease = job.lease_expires_at
        if lease is not None and lease <= now:
            return (
                f"Its worker {job.worker_id} stopped renewing: the lease lapsed at {_when(lease)}, "
                f"{_seconds(now - lease)} s ago, and the next stale sweep takes the job back ({spent})."
            )
        if job.cancel_requested:
            return (
                f"Cancel requested: worker {job.worker_id} stops at its next renewal, "
                f"at the latest when its lease ends at {_when(lease)}."
            )
        return (
            f"Running on worker {job.worker_id}, stage {job.stage or '-'} ({job.progress}%), "
            f"lease until {_when(lease)} ({spent})."
        )
    if job.status == JobStatus.COMPLETED:
        return f"Completed at {_when(job.completed_at)}."
    if job.status == JobStatus.CANCELLED:
        return f"Cancelled at {_when(job.completed_at)}."
    return f"Failed with {job.error_code or 'an error'} at {_when(job.completed_at)} ({spent}): {job.error_message}"


def status_counts(using: str = "default") -> dict[str, int]:
    """Jobs per status (every status, 0 where none), read off the status index."""
    counts = {status: 0 for status in JobStatus.values}
    grouped = AnalysisJob.objects.using(using).order_by().values_list("status").annotate(count=Count("id"))
    counts.update(dict(grouped.values_list("status", "count")))
    return counts


def oldest_eligible(now: dt.datetime, using: str = "default") -> dt.datetime | None:
    """When the oldest job a worker could claim now was queued (the claim index's first row), or None."""
    return AnalysisJob.objects.using(using).filter(_eligible(now)).aggregate(oldest=Min("created_at"))["oldest"]


def summary(now: dt.datetime, using: str = "default") -> dict:
    """Return the queue's health as JSON-ready values."""
    jobs = AnalysisJob.objects.using(using)
    counts = status_counts(using)
    queued = jobs.filter(status=JobStatus.QUEUED)
    oldest = oldest_eligible(now, using)
    backoff = queued.filter(next_attempt_at__gt=now).aggregate(count=Count("id"), next=Min("next_attempt_at"))
    running = list(
        jobs.filter(status=JobStatus.RUNNING).order_by("lease_expires_at")
        .values("id", "worker_id", "stage", "progress", "lease_expires_at", "cancel_requested")
    )
    workers: dict[str, dict] = {}
    for row in running:
        seen = workers.setdefault(row["worker_id"], {"worker_id": row["worker_id"], "jobs": 0, "lease_until": row["lease_expires_at"]})
        seen["jobs"] += 1
        seen["lease_until"] = max(seen["lease_until"], row["lease_expires_at"])
    failures = dict(
        jobs.filter(status=JobStatus.FAILED, completed_at__gte=now - dt.timedelta(hours=1)).exclude(error_code="")
        .order_by().values_list("error_code").annotate(count=Count("id")).values_list("error_code", "count")
    )
    return {
        "at": _when(now),
        "jobs": counts,
        "oldest_queued_seconds": _seconds(now - oldest) if oldest else None,
        "backoff": {"jobs": backoff["count"], "next_eligible_at": _when(backoff["next"]) if backoff["next"] else None},
        "running": [
            {
                "id": row["id"], "worker_id": row["worker_id"], "stage": row["stage"], "progress": row["progress"],
                "lease_remaining_seconds": round((row["lease_expires_at"] - now).total_seconds()),
                "cancel_requested": row["cancel_requested"],
            }
            for row in running
        ],
        "failures_last_hour": dict(sorted(failures.items())),
        "workers": [
            {"worker_id": seen["worker_id"], "jobs": seen["jobs"], "state": "alive" if seen["lease_until"] > now else "gone"}
            for seen in sorted(workers.values(), key=lambda seen: seen["worker_id"])
        ],
    }


def summary_lines(health: dict) -> list[str]:
    """The summary as lines a person reads."""
    jobs = health["jobs"]
    lines = ["jobs      " + "  ".join(f"{status} {count}" for status, count in jobs.items())]
    oldest = health["oldest_queued_seconds"]
    lines.append(f"queue     oldest eligible job waiting {oldest} s" if oldest is not None else "queue     nothing eligible")
    backoff = health["backoff"]
    if backoff["jobs"]:
        lines.append(f"backoff   {backoff['jobs']} job(s); the next is eligible at {backoff['next_eligible_at']}")
    for row in health["running"]:
        lease = row["lease_remaining_seconds"]
        state = f"lease {lease} s left" if lease > 0 else f"lease lapsed {-lease} s ago"
        cancel = ", cancel requested" if row["cancel_requested"] else ""
        lines.append(f"running   job {row['id']} on {row['worker_id']}: stage {row['stage'] or '-'} ({row['progress']}%), {state}{cancel}")
    failures = health["failures_last_hour"]
    lines.append("failures  last hour: " + (", ".join(f"{code} {count}" for code, count in failures.items()) or "none"))
    workers = health["workers"]
    lines.append("workers   " + (", ".join(f"{seen['worker_id']} ({seen['state']}, {seen['jobs']} job(s))" for seen in workers) or "none holds a lease"))
    return lines
