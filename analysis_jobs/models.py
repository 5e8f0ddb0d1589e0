"""
The queue's state: one ``AnalysisJob`` row per requested analysis, one ``AnalysisSnapshot`` per attempt's result.

Every write to a job goes through ``control_plane.py``; the models only describe the rows and their invariants.
The check constraints below are the invariants the control plane relies on, so a bug there fails loudly in the
database instead of leaving a job that no worker and no sweep will ever touch again.
"""

import hashlib
import secrets

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q


class JobStatus(models.TextChoices):
    # enqueue, a retry's requeue, a sweep's requeue and a graceful hand-back move a job here; claim moves it out.
    QUEUED = "queued", "Queued"
    # claim moves a job here, under a lease; the owning worker or the stale sweep moves it out.
    RUNNING = "running", "Running"
    # the owning worker (after sealing the snapshot) or the sweep (healing a sealed snapshot). Terminal.
    COMPLETED = "completed", "Completed"
    # the owning worker or the sweep, at the attempt limit or on a non-retryable error. Terminal.
    FAILED = "failed", "Failed"
    # request_cancel (a queued job), the owning worker or the sweep (a running one that was asked). Terminal.
    CANCELLED = "cancelled", "Cancelled"


# The stage a job is in once its snapshot is sealed. It lives on the job row so that the guards which must
# respect a seal (complete, requeue, hand back) stay plain column filters: a guard that joined the snapshot
# table would be evaluated by PostgreSQL against the row version it read before waiting for a lock.
SEALED_STAGE = "sealed"

TERMINAL_STATUSES = (JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED)
ACTIVE_STATUSES = (JobStatus.QUEUED, JobStatus.RUNNING)


class SnapshotState(models.TextChoices):
    # a worker created it at the start of an attempt and is filling it.
    BUILDING = "building", "Building"
    # the facts are final and hashed; never modified again.
    SEALED = "sealed", "Sealed"
    # the attempt that built it ended without sealing (error, cancellation, stale worker).
    FAILED = "failed", "Failed"


class SealedSnapshotError(ValidationError):
    """A sealed snapshot is immutable."""


class AnalysisSnapshot(models.Model):
    state = models.CharField(max_length=16, choices=SnapshotState.choices, default=SnapshotState.BUILDING)
    # The canonical JSON document is stored as chunks (``documents.py``; ``read_facts`` joins them); its size is here.
    size = models.PositiveBigIntegerField(default=0, help_text="Bytes of the sealed document's UTF-8 text.")
    content_hash = models.CharField(max_length=64, blank=True, default="", db_index=True)
    # What makes two analyses the same (source, revision, schema, extractors, config); reuse looks it up.
    identity = models.CharField(max_length=64, blank=True, default="", db_index=True)
    failure_code = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField()
    sealed_at = models.DateTimeField(null=True, blank=True)
    # The document's ``summary``, kept beside it so that showing a snapshot never reads a document of many MB.
    summary = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=~Q(state=SnapshotState.SEALED) | (Q(sealed_at__isnull=False) & ~Q(content_hash="")),
                name="snapshot_sealed_has_hash",
            ),
        ]

    def __str__(self):
        return f"snapshot {self.pk} ({self.state})"

    def save(self, *args, **kwargs):
        if self.pk is not None and AnalysisSnapshot.objects.filter(pk=self.pk, state=SnapshotState.SEALED).exists():
            raise SealedSnapshotError(f"Snapshot {self.pk} is sealed and cannot be changed.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        if self.state == SnapshotState.SEALED:
            raise SealedSnapshotError(f"Snapshot {self.pk} is sealed and cannot be deleted.")
        return super().delete(*args, **kwargs)

    def read_facts(self) -> str:
        """Return the canonical JSON document, byte for byte what was hashed ("" unless sealed)."""
        from .documents import DocumentStore

        return DocumentStore(self._state.db or "default").read(self.pk)

    def iter_facts(self):
        """Yield the canonical JSON document a chunk at a time (nothing unless sealed)."""
        from .documents import DocumentStore

        return DocumentStore(self._state.db or "default").iter(self.pk)


class DocumentChunk(models.Model):
    """A piece of sealed documents' text, stored once however many snapshots hold it (see ``documents.py``)."""

    digest = models.CharField(max_length=64, primary_key=True, help_text="SHA-256 of the text's UTF-8 bytes.")
    # Text, not jsonb: a chunk is a slice of canonical JSON, byte for byte, and seldom JSON on its own.
    text = models.TextField()
    # A chunk that no sealed snapshot lists (its seal was refused, or never came) is pruned once this is old enough.
    recorded_at = models.DateTimeField(help_text="When an analysis last stored the chunk.")

    def __str__(self):
        return f"chunk {self.digest[:12]}"


class SnapshotChunk(models.Model):
    """The place of one chunk in one sealed snapshot's document."""

    pk = models.CompositePrimaryKey("snapshot", "position")
    snapshot = models.ForeignKey(AnalysisSnapshot, on_delete=models.CASCADE, related_name="chunks")
    position = models.PositiveIntegerField()
    chunk = models.ForeignKey(DocumentChunk, on_delete=models.PROTECT, related_name="+")

    def __str__(self):
        return f"chunk {self.position} of snapshot {self.snapshot_id}"


class SnapshotBasis(models.Model):
    """What a later analysis of the same source splices a sealed snapshot's document from (``pipeline/splice.py``).

    Kept for the latest snapshot of each lineage (source, schema, extractors, linking, settings) only. Nothing
    depends on one being there: without it, an analysis links every file, as the first one did.
    """

    snapshot = models.OneToOneField(AnalysisSnapshot, primary_key=True, on_delete=models.CASCADE, related_name="basis")
    lineage = models.CharField(max_length=64, db_index=True)
    # The records of the files, what the linker learnt, the document's index and its summary's counts, compressed.
    data = models.BinaryField()
    recorded_at = models.DateTimeField()

    def __str__(self):
        return f"basis of snapshot {self.snapshot_id}"


class AnalysisJob(models.Model):
    source = models.CharField(max_length=1024, help_text="The directory or repository path analysed.")
    revision = models.CharField(max_length=255, blank=True, default="", help_text="The revision asked for, if any.")
    commit = models.CharField(max_length=64, blank=True, default="", help_text="The commit the revision named when queued.")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="analysis_jobs"
    )
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED)
    stage = models.CharField(max_length=32, blank=True, default="")
    progress = models.PositiveSmallIntegerField(default=0)
    attempt = models.PositiveIntegerField(default=0, help_text="Attempts started (claims); a hand-off spends none.")
    max_attempts = models.PositiveIntegerField(default=3)
    cancel_requested = models.BooleanField(default=False)
    cancel_requested_at = models.DateTimeField(null=True, blank=True, help_text="When cancellation was first asked.")
    worker_id = models.CharField(max_length=64, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    snapshot = models.ForeignKey(AnalysisSnapshot, null=True, blank=True, on_delete=models.PROTECT, related_name="jobs")
    error_code = models.CharField(max_length=64, blank=True, default="")
    error_message = models.TextField(blank=True, default="")
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        permissions = [("cancel_analysisjob", "Can request cancellation of an analysis job")]
        indexes = [
            # The claim query: oldest queued job first.
            models.Index(fields=["created_at", "id"], condition=Q(status="queued"), name="job_claim_idx"),
            # The stale sweep: running jobs whose lease lapsed.
            models.Index(fields=["lease_expires_at"], condition=Q(status="running"), name="job_expired_lease_idx"),
            # The admin's job list, newest first, whole or filtered by status: a page is read off an index
            # instead of sorting the table.
            models.Index(fields=["created_at", "id"], name="job_list_idx"),
            models.Index(fields=["status", "created_at", "id"], name="job_list_status_idx"),
            # The admin's error-code filter; most jobs have none, so only the ones that do are indexed.
            models.Index(fields=["error_code"], condition=~Q(error_code=""), name="job_error_code_idx"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=JobStatus.values), name="job_status_valid"),
            models.CheckConstraint(condition=Q(progress__gte=0, progress__lte=100), name="job_progress_0_100"),
            models.CheckConstraint(condition=Q(max_attempts__gte=1), name="job_max_attempts_positive"),
            models.CheckConstraint(condition=Q(attempt__lte=models.F("max_attempts")), name="job_attempt_within_budget"),
            models.CheckConstraint(
                condition=~Q(status="running") | (~Q(worker_id="") & Q(lease_expires_at__isnull=False)),
                name="job_running_is_leased",
            ),
            models.CheckConstraint(
                condition=~Q(status="queued") | Q(lease_expires_at__isnull=True, worker_id=""),
                name="job_queued_is_unleased",
            ),
            # A queued job that is asked to stop is cancelled on the spot, so none waits with the flag set.
            models.CheckConstraint(
                condition=~Q(status="queued") | Q(cancel_requested=False), name="job_queued_not_cancelling"
            ),
            models.CheckConstraint(
                condition=~Q(status__in=["completed", "failed", "cancelled"])
                | Q(completed_at__isnull=False, lease_expires_at__isnull=True),
                name="job_terminal_is_finished",
            ),
            models.CheckConstraint(
                condition=~Q(status="completed") | Q(snapshot__isnull=False), name="job_completed_has_snapshot"
            ),
            # One active job per source and revision: enqueueing it again returns that job, even under a race.
            models.UniqueConstraint(
                fields=["source", "revision"], condition=Q(status__in=["queued", "running"]), name="job_one_active_per_source"
            ),
        ]

    def __str__(self):
        return f"analysis {self.pk} of {self.source}"

    @property
    def is_terminal(self):
        return self.status in TERMINAL_STATUSES


# The caches below only grow as analyses run; ``prune_analysis_cache`` removes what was recorded long ago, by
# this column. A row pruned costs one more read (and parse) of a file, never a wrong result. Not indexed: every
# analysis writes a row per file it reads, and pruning is a rare sweep.
RECORDED_AT_HELP = "When an analysis recorded the row (pruning goes by it)."


class FileFacts(models.Model):
    """What one extractor found in one file's content: the per-file cache that makes re-analysis incremental.

    Keyed by content, not path, so an unchanged file (or a copy of it anywhere) is never parsed twice; rows are
    written once and never changed.
    """

    sha256 = models.CharField(max_length=64)
    extractor = models.CharField(max_length=64, help_text="Extractor name and version, e.g. python@1+py3.11.")
    facts = models.TextField(help_text="The extractor's path-independent output, as JSON.")
    recorded_at = models.DateTimeField(help_text=RECORDED_AT_HELP)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["sha256", "extractor"], name="file_facts_one_per_content")]

    def __str__(self):
        return f"{self.extractor} facts of {self.sha256[:12]}"


class FileDigest(models.Model):
    """What reading a file's bytes told us (``pipeline.repository.Digest``), kept under a name for those bytes."""

    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    lines = models.PositiveIntegerField()
    binary = models.BooleanField()
    recorded_at = models.DateTimeField(help_text=RECORDED_AT_HELP)

    class Meta:
        abstract = True


class BlobDigest(FileDigest):
    """What reading one git blob told us, so that the same blob in the next revision is not read again.

    A blob id names its content, so the digest holds wherever the blob turns up (any commit, any repository);
    rows are written once and never changed. A revision's unchanged files cost a look-up here and one in
    ``FileFacts``, and only the changed files are read from git.
    """

    oid = models.CharField(max_length=64, help_text="The git object id (SHA-1, or SHA-256 in a SHA-256 repository).")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["oid"], name="blob_digest_one_per_object")]

    def __str__(self):
        return f"blob {self.oid[:12]}"


class StatDigest(FileDigest):
    """What reading one file of a directory told us, by the file's stamp: so that an untouched file is not read again.

    The stamp is a digest of the file's absolute path with its device, inode, size and modification and change
    times in nanoseconds (see ``DirectorySource``): any write, rename or replacement changes the change time,
    which no tool can set back. Only files left alone for a while are stamped, so a write in the same clock tick
    as the read that recorded it cannot go unseen. A file whose stamp has changed is read again and gets a new
    row; rows are written once and never changed.
    """

    stamp = models.CharField(max_length=64)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["stamp"], name="stat_digest_one_per_stamp")]

    def __str__(self):
        return f"stamp {self.stamp[:12]}"


class ApiToken(models.Model):
    """A bearer token for the HTTP API, acting as its user. Only the token's SHA-256 is kept: the token itself is
    shown once, when made (``create_api_token``), and a leaked table gives no one a token to present."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="analysis_api_tokens")
    digest = models.CharField(max_length=64, unique=True)
    name = models.CharField(max_length=100, blank=True, default="", help_text="What the token is for.")
    created_at = models.DateTimeField()

    def __str__(self):
        return f"API token {self.name or self.pk} of {self.user}"

    @staticmethod
    def digest_of(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    @classmethod
    def issue(cls, user, name: str = "", *, now) -> tuple["ApiToken", str]:
        """Make a token for ``user``; return the row and the token, which is never stored."""
        token = secrets.token_urlsafe(32)
        return cls.objects.create(user=user, digest=cls.digest_of(token), name=name, created_at=now), token
