"""Argument types shared by the commands: each rejects a bad value with a message argparse prints."""

import argparse


# The largest values the columns hold on every engine: a count is stored as a 32-bit integer on PostgreSQL,
# a job id as a 64-bit one on SQLite. A larger value is refused here rather than as a database error.
MAX_COUNT = 2**31 - 1
MAX_JOB_ID = 2**63 - 1


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be at least 1")
    if value > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"{text} must be at most {MAX_COUNT}")
    return value


def port(text: str) -> int:
    value = positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{text} is not a port (1 to 65535)")
    return value


# The longest duration an option takes. Beyond it a lease's expiry overflows the date type and a wait overflows
# the thread timeout, so the worker would loop on the error instead of refusing the value up front.
MAX_SECONDS = 7 * 24 * 3600


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} must be a finite number of seconds, 0 or more")
    if value > MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"{text} must be at most {MAX_SECONDS} seconds (a week)")
    return value


def positive_float(text: str) -> float:
    value = non_negative_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"{text} must be more than 0")
    return value


def job_id(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a job id (a whole number)") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a job id (ids start at 1)")
    if value > MAX_JOB_ID:
        raise argparse.ArgumentTypeError(f"{text} is not a job id (ids are at most {MAX_JOB_ID})")
    return value


# The oldest age an option takes: a century back is still a date every engine stores.
MAX_DAYS = 36500


def days(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of days") from None
    if not 0 <= value <= MAX_DAYS:
        raise argparse.ArgumentTypeError(f"{text} must be a number of days from 0 to {MAX_DAYS}")
    return value
