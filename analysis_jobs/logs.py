"""
``ANALYSIS_LOG_FORMAT=json``: one JSON object per line, for a log pipeline to index.

Every event this app logs is written as ``key=value`` words (``job id=7 attempt=1 stage=extract state=running
worker=w1``), so the fields are read back from the message: ``id`` is given as ``job``, numbers as numbers. The
message itself stays too, and an exception's traceback goes in ``exc``.
"""

import datetime as dt
import json
import logging
import re

FIELD = re.compile(r"(?<!\S)([a-z_]+)=(\S*)")


def fields_of(message: str) -> dict:
    found = {}
    for key, value in FIELD.findall(message):
        key = "job" if key == "id" and message.startswith("job ") else key
        found[key] = int(value) if value.isdigit() else value
    return found


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        line = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": message,
            **fields_of(message),
        }
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, sort_keys=True)
