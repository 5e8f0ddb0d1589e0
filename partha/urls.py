from django.contrib import admin
from django.urls import include, path

from analysis_jobs.http_api import prometheus

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("analysis_jobs.urls")),
    path("metrics", prometheus, name="metrics"),
]
