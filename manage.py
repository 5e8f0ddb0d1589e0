#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""
import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "partha.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        settings.DATABASES  # load the settings now: a bad DATABASE_URL is a one-line error, not a traceback
    except ImproperlyConfigured as exc:
        sys.exit(f"Error: {exc}")
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
