#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""
import os
import select
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
    # A name the terminal's encoding cannot spell is shown escaped (\u65e5), not a UnicodeEncodeError; what
    # must be exact (show_analysis --facts) is written as bytes.
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(errors="backslashreplace")
    try:
        execute_from_command_line(sys.argv)
        sys.stdout.flush()  # here, not at exit, where a failed flush could only be reported as ignored
    except BrokenPipeError:
        if not _reader_gone(sys.stdout):
            raise
        # Whoever read the output has stopped (`analysis_status | head -1`): stop too, quietly, as other
        # command-line tools do. What is still buffered goes nowhere instead of failing again at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)


def _reader_gone(stream) -> bool:
    """Return whether ``stream`` is a pipe or socket that no one reads any more."""
    poller = select.poll()
    poller.register(stream.fileno(), select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


if __name__ == "__main__":
    main()
