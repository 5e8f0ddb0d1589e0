from django.urls import path

from . import http_api

urlpatterns = [
    path("analyses/", http_api.analyses, name="analysis-list"),
    path("analyses/<int:job_id>/", http_api.analysis, name="analysis-detail"),
    path("analyses/<int:job_id>/cancel/", http_api.cancel, name="analysis-cancel"),
    path("analyses/<int:job_id>/facts/", http_api.facts, name="analysis-facts"),
]
