"""The peers the queue is measured against, each with its default settings: django-tasks-db and procrastinate."""
