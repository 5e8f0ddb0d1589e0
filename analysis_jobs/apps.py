from django.apps import AppConfig


class AnalysisJobsConfig(AppConfig):
    name = "analysis_jobs"
    verbose_name = "Analysis jobs"
    default_auto_field = "django.db.models.BigAutoField"
