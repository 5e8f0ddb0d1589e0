"""
The HTTP API (submit, status, cancel, facts and a paginated list, as JSON, over the same control plane) and the
Prometheus endpoint.

A client authenticates with ``Authorization: Bearer TOKEN`` (an ``ApiToken``), or a browser with its Django
session (then a POST needs its CSRF token, as any form would). A job is seen only by its owner, or by staff with
the view permission: another owner's job is a 404, so ids reveal nothing. Errors are
``{"error": {"code": ..., "message": ...}}`` with 400, 401, 404, 405 or 409, never a 500 for bad input. A client
queues sources only under ``ANALYSIS_SOURCE_ROOTS``.
"""

import json
from functools import wraps

from django.conf import settings
from django.db.models import Q
from django.http import Http404, HttpResponse, JsonResponse, StreamingHttpResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from . import api
from .clock import SystemClock
from .control_plane import CancelOutcome
from .exceptions import AnalysisError, CancelRefused
from .health import why_not_running
from .metrics import WORKER, QueueCollector
from .models import AnalysisJob, ApiToken, JobStatus
from .presenters import job_as_dict

PAGE_SIZE = 50
clock = SystemClock()


def error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message}}, status=status)


def _authenticated_user(request):
    """Return the user a bearer token or the session names, or None."""
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer "):
        token = ApiToken.objects.select_related("user").filter(digest=ApiToken.digest_of(header[7:].strip())).first()
        return token.user if token is not None and token.user.is_active else None
    user = request.user
    return user if user.is_authenticated else None


def endpoint(*methods):
    """An API view: the allowed methods, the user (token or session; a session's POST checks CSRF), JSON errors."""

    def decorate(view):
        @csrf_exempt  # a token is not a cookie, so it needs no CSRF token; a session's POST is checked below
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if request.method not in methods:
                response = error(405, "method-not-allowed", f"Use {' or '.join(methods)}.")
                response["Allow"] = ", ".join(methods)
                return response
            user = _authenticated_user(request)
            if user is None:
                return error(401, "unauthenticated", "Give an API token (Authorization: Bearer TOKEN) or log in.")
            if request.method == "POST" and not request.headers.get("Authorization"):
                refused = CsrfViewMiddleware(lambda _: None).process_view(request, None, (), {})
                if refused is not None:
                    return error(403, "csrf-failed", "A session's POST needs its CSRF token.")
            request.api_user = user
            return view(request, *args, **kwargs)

        return wrapper

    return decorate


def visible_jobs(user):
    """The jobs ``user`` may see: all with the view permission, else their own."""
    jobs = AnalysisJob.objects.select_related("snapshot")
    return jobs if user.has_perm("analysis_jobs.view_analysisjob") else jobs.filter(owner=user)


def _job(request, job_id):
    return visible_jobs(request.api_user).filter(pk=job_id).first()


def _not_found(job_id) -> JsonResponse:
    return error(404, "not-found", f"No job {job_id}.")


def _shown(job) -> dict:
    return {**job_as_dict(job), "why": why_not_running(job, clock.now())}


@endpoint("GET", "POST")
def analyses(request):
    """``POST``: queue ``{"source": PATH, "revision": REV}`` (201, or 200 with the job already active for them).
    ``GET``: the visible jobs, newest first, ``?status=`` to filter, ``?after=ID`` for the next page."""
    if request.method == "POST":
        return _submit(request)
    jobs = visible_jobs(request.api_user).order_by("-created_at", "-id")
    status = request.GET.get("status")
    if status is not None:
        if status not in JobStatus.values:
            return error(400, "invalid-status", f"status must be one of {', '.join(JobStatus.values)}.")
        jobs = jobs.filter(status=status)
    after = request.GET.get("after")
    if after is not None:
        cursor = visible_jobs(request.api_user).filter(pk=after).values("created_at", "pk").first() if after.isdigit() else None
        if cursor is None:
            return error(400, "invalid-cursor", "after must be the id of a job of the previous page.")
        jobs = jobs.filter(Q(created_at__lt=cursor["created_at"]) | Q(created_at=cursor["created_at"], pk__lt=cursor["pk"]))
    page = list(jobs[: PAGE_SIZE + 1])
    more = len(page) > PAGE_SIZE
    page = page[:PAGE_SIZE]
    following = None
    if more:
        query = request.GET.copy()
        query["after"] = str(page[-1].pk)
        following = f"{reverse('analysis-list')}?{query.urlencode()}"
    return JsonResponse({"results": [_shown(job) for job in page], "next": following})


def _submit(request):
    try:
        body = json.loads(request.body or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        return error(400, "invalid-json", "The body must be a JSON object.")
    if not isinstance(body, dict) or not isinstance(body.get("source"), str) or not body["source"]:
        return error(400, "invalid-source", 'Give {"source": "/path/to/repository"} (and "revision" if wanted).')
    revision = body.get("revision", "")
    if not isinstance(revision, str):
        return error(400, "invalid-revision", "revision must be a string.")
    try:
        job, created = api.enqueue(body["source"], revision=revision, owner=request.api_user, roots=api.source_roots())
    except api.SourceRefused as refused:
        return error(400, refused.code, str(refused))
    except AnalysisError as failure:
        return error(400, failure.code.removeprefix("RI-").lower(), failure.message)
    if job.owner_id != request.api_user.pk and not request.api_user.has_perm("analysis_jobs.view_analysisjob"):
        # Another owner's job is already active for this source and revision: say so without showing it.
        return error(409, "already-active", "This source and revision have an active job of another owner.")
    return JsonResponse(_shown(job), status=201 if created else 200)


@endpoint("GET")
def analysis(request, job_id):
    job = _job(request, job_id)
    return JsonResponse(_shown(job)) if job is not None else _not_found(job_id)


@endpoint("POST")
def cancel(request, job_id):
    job = _job(request, job_id)
    if job is None:
        return _not_found(job_id)
    if job.owner_id != request.api_user.pk and not request.api_user.has_perm("analysis_jobs.cancel_analysisjob"):
        return _not_found(job_id) if not request.api_user.has_perm("analysis_jobs.view_analysisjob") else error(
            403, "permission-denied", "Cancelling another owner's job needs the cancel permission."
        )
    try:
        outcome = api.cancel(job.pk, by=request.api_user.get_username())
    except CancelRefused as refused:
        return error(409, "job-finished", str(refused))
    return JsonResponse({"id": job.pk, "outcome": "cancelled" if outcome is CancelOutcome.CANCELLED else "cancel-requested"}, status=202)


@endpoint("GET")
def facts(request, job_id):
    """The sealed snapshot's canonical JSON, byte for byte, with its graph hash as the ETag."""
    job = _job(request, job_id)
    if job is None:
        return _not_found(job_id)
    if job.status != JobStatus.COMPLETED:
        return error(409, "not-completed", f"Job {job.pk} is {job.status}: it has no facts yet.")
    etag = f'"{job.snapshot.content_hash}"'
    if etag in [tag.strip() for tag in request.headers.get("If-None-Match", "").split(",")]:
        response = HttpResponse(status=304)
    else:
        response = StreamingHttpResponse(job.snapshot.iter_facts(), content_type="application/json; charset=utf-8")
    response["ETag"] = etag
    return response


def prometheus(request):
    """``/metrics``: the queue's gauges (and this process's counters) in Prometheus's text format; 404 unless
    ``ANALYSIS_METRICS`` is on."""
    if not settings.ANALYSIS_JOBS["METRICS"]:
        raise Http404("Metrics are off: set ANALYSIS_METRICS=true.")
    registry = CollectorRegistry(auto_describe=False)
    registry.register(QueueCollector(clock))
    return HttpResponse(generate_latest(registry) + generate_latest(WORKER), content_type=CONTENT_TYPE_LATEST)
