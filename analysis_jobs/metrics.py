"""
Prometheus metrics (the official ``prometheus-client``).

What happens inside one worker process (claims, completions, failures by code, reclaims, writes its lost lease
refused, how long attempts take, how long a cancellation took to land) is counted there and served by
``runworker --metrics-port PORT``. The queue itself (jobs per status, the oldest eligible job's age) is read
from the database when scraped, by the web process's ``/metrics`` (on when ``ANALYSIS_METRICS`` is true), so
any number of workers and web processes report it alike.
"""

import datetime as dt

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily

from .health import oldest_eligible, status_counts

WORKER = CollectorRegistry(auto_describe=True)
CLAIMS = Counter("analysis_claims", "Jobs this process claimed.", registry=WORKER)
COMPLETIONS = Counter("analysis_completions", "Jobs this process completed.", registry=WORKER)
FAILURES = Counter("analysis_failures", "Jobs this process failed, by error code.", ["code"], registry=WORKER)
RECLAIMS = Counter("analysis_reclaims", "Jobs whose lapsed lease this process's sweep took over.", registry=WORKER)
FENCED = Counter(
    "analysis_fenced_writes_refused", "Writes this process made under a lease it no longer held, refused by the guard.",
    registry=WORKER,
)
ATTEMPT_SECONDS = Histogram(
    "analysis_attempt_duration_seconds", "Time from a claim to the end of the attempt, in this process.",
    buckets=(0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600), registry=WORKER,
)
CANCEL_SECONDS = Histogram(
    "analysis_cancellation_latency_seconds", "Time from a cancellation request to the running job's end.",
    buckets=(0.1, 0.5, 1, 5, 10, 30, 60, 300), registry=WORKER,
)


class QueueCollector:
    """The queue's gauges, read from the database at each scrape through the list and claim indexes."""

    def __init__(self, clock, using: str = "default"):
        self.clock = clock
        self.using = using

    def collect(self):
        now = self.clock.now()
        depth = GaugeMetricFamily("analysis_jobs", "Jobs in the queue, by status.", labels=["status"])
        for status, count in status_counts(self.using).items():
            depth.add_metric([status], count)
        yield depth
        oldest = oldest_eligible(now, self.using)
        yield GaugeMetricFamily(
            "analysis_oldest_queued_seconds", "Age of the oldest job a worker could claim now (0 when none).",
            value=max(0.0, (now - oldest).total_seconds()) if oldest else 0.0,
        )


def observe_cancellation(requested_at: dt.datetime | None, finished_at: dt.datetime) -> None:
    if requested_at is not None:
        CANCEL_SECONDS.observe(max(0.0, (finished_at - requested_at).total_seconds()))
