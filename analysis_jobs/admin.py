"""
The admin: jobs and snapshots to look at, and two actions that go through the control plane.

Queue state is read-only here: a person asks (cancel, retry) and the control plane decides. Staff who are not
superusers see and act on their own jobs only.
"""


from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse, StreamingHttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from .clock import SystemClock
from .control_plane import DatabaseControlPlane
from .exceptions import CancelRefused
from .health import summary, summary_lines, why_not_running
from .paginators import ErrorCodeFilter, EstimatedCountPaginator
from .models import AnalysisJob, AnalysisSnapshot, ApiToken, JobStatus, SnapshotState
from .pipeline.repository import identity_for_revision
from .pipeline.summary import describe
from .presenters import job_as_dict

clock = SystemClock()


class OwnedJobsMixin:
    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        return self.owned(queryset, request.user)


@admin.register(AnalysisJob)
class AnalysisJobAdmin(OwnedJobsMixin, admin.ModelAdmin):
    list_display = (
        "id", "source", "status", "stage", "progress", "attempts", "worker_id", "lease_remaining", "owner", "created_at",
    )
    list_filter = ("status", "cancel_requested", ErrorCodeFilter)
    search_fields = ("source", "worker_id", "error_code", "owner__username")
    list_select_related = ("owner",)
    show_full_result_count = False
    paginator = EstimatedCountPaginator  # no full COUNT(*) of a million-row table per page view
    ordering = ("-created_at", "-id")
    actions = ["request_cancellation", "retry"]
    fields = (
        "why", "source", "revision", "owner", "status", "stage", "progress", "attempt", "max_attempts", "cancel_requested",
        "worker_id", "lease_expires_at", "next_attempt_at", "snapshot", "error_code", "error_message",
        "created_at", "updated_at", "started_at", "completed_at",
    )
    readonly_fields = fields

    refresh_seconds = 5  # how often the overview and a live job's page poll

    @staticmethod
    def owned(queryset, user):
        return queryset.filter(owner=user)

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path("overview/", view(self.overview), name="analysis_jobs_analysisjob_overview"),
            path("overview.json", view(self.overview_json), name="analysis_jobs_analysisjob_overview_json"),
            path("<int:object_id>/live.json", view(self.live_json), name="analysis_jobs_analysisjob_live"),
            *super().get_urls(),
        ]

    def _health(self, request):
        if not self.has_view_permission(request):
            raise PermissionDenied
        health = summary(clock.now())
        return health, summary_lines(health)

    def overview(self, request):
        """The queue's health (``analysis_status --summary``), refreshing itself."""
        health, lines = self._health(request)
        context = {
            **self.admin_site.each_context(request), "title": "Queue overview", "health": health,
            "lines": "\n".join(lines), "refresh_seconds": self.refresh_seconds, "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/analysis_jobs/analysisjob/overview.html", context)

    def overview_json(self, request):
        health, lines = self._health(request)
        return JsonResponse({"health": health, "lines": lines})

    def live_json(self, request, object_id):
        """What a job's page shows that moves, for its poll; another owner's job is a 404, as on the page."""
        job = self.get_queryset(request).select_related("snapshot").filter(pk=object_id).first()
        if job is None:
            raise Http404
        return JsonResponse({**job_as_dict(job), "why": why_not_running(job, clock.now())})

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra_context = {**(extra_context or {}), "refresh_seconds": self.refresh_seconds}
        return super().change_view(request, object_id, form_url, extra_context)

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_cancel_permission(self, request):
        return request.user.has_perm("analysis_jobs.cancel_analysisjob")

    def has_retry_permission(self, request):
        return request.user.has_perm("analysis_jobs.add_analysisjob")

    @admin.display(description="why isn't it running?")
    def why(self, job):
        return why_not_running(job, clock.now())

    @admin.display(description="attempt", ordering="attempt")
    def attempts(self, job):
        return f"{job.attempt}/{job.max_attempts}"

    @admin.display(description="lease left")
    def lease_remaining(self, job):
        if job.status != JobStatus.RUNNING or job.lease_expires_at is None:
            return "-"
        seconds = (job.lease_expires_at - clock.now()).total_seconds()
        return f"{seconds:.0f}s" if seconds >= 0 else f"lapsed {-seconds:.0f}s ago"

    @admin.action(permissions=["cancel"], description="Request cancellation")
    def request_cancellation(self, request, queryset):
        control_plane = DatabaseControlPlane()
        acted, refused = 0, 0
        for pk in queryset.values_list("pk", flat=True):
            try:
                control_plane.request_cancel(pk, by=request.user.get_username())
            except CancelRefused:
                refused += 1
            else:
                acted += 1
        self._report(request, f"Cancellation requested for {acted} job(s).", refused, "already finished")

    @admin.action(permissions=["retry"], description="Retry (queue again as a new job)")
    def retry(self, request, queryset):
        control_plane = DatabaseControlPlane()
        acted, refused = 0, 0
        for job in queryset.only("source", "revision", "commit", "owner_id", "max_attempts", "status"):
            if job.status not in (JobStatus.FAILED, JobStatus.CANCELLED):
                refused += 1
                continue
            # The commit the revision named when the job was queued, not where a branch points now, as
            # enqueue_analysis records it; and one analysed since completes at once, as there.
            _, created = control_plane.enqueue(
                job.source, revision=job.revision, commit=job.commit, owner=job.owner, max_attempts=job.max_attempts,
                reuse_identity=identity_for_revision(job.source, job.commit) if job.commit else "",
            )
            if created:
                acted += 1
            else:
                refused += 1
        self._report(request, f"Queued {acted} job(s) again.", refused, "not failed or cancelled, or already queued")

    def _report(self, request, message, refused, why):
        if refused:
            message += f" {refused} not eligible ({why})."
        self.message_user(request, message, messages.SUCCESS if not refused else messages.WARNING)


@admin.register(AnalysisSnapshot)
class AnalysisSnapshotAdmin(OwnedJobsMixin, admin.ModelAdmin):
    list_display = ("id", "state", "content_hash", "failure_code", "created_at", "sealed_at")
    list_filter = ("state",)
    search_fields = ("content_hash",)
    search_help_text = "A content hash, or its first characters (as in a download's file name)."
    show_full_result_count = False
    readonly_fields = ("state", "content_hash", "identity", "size", "failure_code", "created_at", "sealed_at", "counts", "download")

    @staticmethod
    def owned(queryset, user):
        return queryset.filter(jobs__owner=user).distinct()

    def get_search_results(self, request, queryset, search_term):
        """Match the snapshots whose content hash starts with the term (hashes are lower-case hex).

        A prefix is how a hash is quoted, and a case-sensitive prefix match is served by the column's index,
        where Django's default search (the term anywhere, in any case) reads every snapshot.
        """
        term = search_term.strip().lower()
        return (queryset.filter(content_hash__startswith=term) if term else queryset), False

    def get_urls(self):
        download = path(
            "<path:object_id>/facts.json",
            self.admin_site.admin_view(self.download_facts),
            name="analysis_jobs_analysissnapshot_facts",
        )
        return [download, *super().get_urls()]

    @admin.display(description="summary")
    def counts(self, snapshot):
        if snapshot.state != SnapshotState.SEALED or not snapshot.summary:
            return "-"  # a document with no summary (from a pipeline other than the repository one)
        return format_html("<pre>{}</pre>", "\n".join(describe(snapshot.summary)))

    @admin.display(description="canonical JSON")
    def download(self, snapshot):
        if snapshot.state != SnapshotState.SEALED:
            return "-"
        url = reverse("admin:analysis_jobs_analysissnapshot_facts", args=[snapshot.pk], current_app=self.admin_site.name)
        return format_html('<a href="{}">Download facts ({} bytes)</a>', url, snapshot.size)

    def download_facts(self, request, object_id):
        """Send a sealed snapshot's canonical JSON, byte for byte, to a user who may see the snapshot."""
        snapshot = self.get_object(request, object_id)
        if snapshot is None or not self.has_view_permission(request, snapshot) or snapshot.state != SnapshotState.SEALED:
            raise Http404("No sealed snapshot with that id is visible to you.")
        # Streamed a chunk at a time: a monorepo's document can be hundreds of MB.
        response = StreamingHttpResponse((text.encode() for text in snapshot.iter_facts()), content_type="application/json; charset=utf-8")
        response["Content-Length"] = str(snapshot.size)
        response["Content-Disposition"] = f'attachment; filename="snapshot-{snapshot.pk}-{snapshot.content_hash[:12]}.json"'
        return response

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are made by ``create_api_token`` (which shows the token once); here they are seen and revoked."""

    list_display = ("name", "user", "created_at")
    fields = ("name", "user", "created_at")
    readonly_fields = fields
    list_select_related = ("user",)

    def has_add_permission(self, request):
        return False
