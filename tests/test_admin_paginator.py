"""The job list's paginator and error-code filter: bounded counting on PostgreSQL, exact counts elsewhere."""

import pytest
from django.db import connection

from analysis_jobs.models import AnalysisJob, JobStatus
from analysis_jobs.paginators import EstimatedCountPaginator

pytestmark = pytest.mark.django_db


class SmallCap(EstimatedCountPaginator):
    exact_up_to = 5


def test_a_small_result_is_counted_exactly(make_job):
    for _ in range(4):
        make_job()

    assert SmallCap(AnalysisJob.objects.order_by("-id"), 2).count == 4


def test_past_the_cap_postgresql_estimates_and_other_engines_count(make_job, django_assert_max_num_queries):
    for _ in range(8):
        make_job()
    paginator = SmallCap(AnalysisJob.objects.order_by("-id"), 2)

    with django_assert_max_num_queries(2):  # a bounded count, then (PostgreSQL) the planner's estimate
        count = paginator.count

    if connection.vendor == "postgresql":
        assert count >= 6  # at least what was counted; the estimate may be rough on a tiny table
    else:
        assert count == 8


def test_the_error_code_filter_offers_the_codes_that_occur(admin_client, make_job, fake_clock):
    make_job(status=JobStatus.FAILED, error_code="RI-JOB-STALE", completed_at=fake_clock.now())
    make_job(status=JobStatus.CANCELLED, error_code="RI-JOB-CANCELLED", completed_at=fake_clock.now())
    make_job()

    page = admin_client.get("/admin/analysis_jobs/analysisjob/")
    filtered = admin_client.get("/admin/analysis_jobs/analysisjob/?error_code=RI-JOB-STALE")

    assert page.status_code == 200 and filtered.status_code == 200
    choices = [c["display"] for spec in page.context["cl"].filter_specs if spec.title == "error code" for c in spec.choices(page.context["cl"])]
    assert choices == ["All", "RI-JOB-CANCELLED", "RI-JOB-STALE"]
    assert [job.error_code for job in filtered.context["cl"].result_list] == ["RI-JOB-STALE"]
