"""What the pipeline reads and how much of it: the source settings of ``settings.ANALYSIS_JOBS``, as one value."""

import hashlib
import json
from dataclasses import dataclass, field

from django.conf import settings


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    """Exclusions and limits. Sizes are bytes, durations seconds."""

    exclude: tuple[str, ...] = ()
    honour_gitignore: bool = True
    max_file_bytes: int = 2 * 1024 * 1024  # a larger file is listed (size only) and not read
    max_total_bytes: int = 1024 * 1024 * 1024  # the whole source; more fails the job with RI-RESOURCE-EXCEEDED
    max_files: int = 200_000
    max_seconds: float = 900.0
    batch_files: int = field(default=256, compare=False)  # files read before one cache look-up, and linked at once
    # Graph facts (nodes and edges) held in memory before they are written out as a sorted run: what bounds the
    # memory a big source's analysis needs (about 60 MB of them), whatever its size.
    facts_in_memory: int = field(default=100_000, compare=False)
    # Processes that parse the files a worker reads (``parsing.Parsers``): 1 parses in the worker's own process.
    extract_processes: int = field(default=1, compare=False)

    @classmethod
    def from_settings(cls) -> "PipelineConfig":
        config = settings.ANALYSIS_JOBS
        return cls(
            exclude=tuple(config.get("EXCLUDE", ())),
            honour_gitignore=bool(config.get("HONOUR_GITIGNORE", True)),
            max_file_bytes=int(config.get("MAX_FILE_BYTES", cls.max_file_bytes)),
            max_total_bytes=int(config.get("MAX_TOTAL_BYTES", cls.max_total_bytes)),
            max_files=int(config.get("MAX_FILES", cls.max_files)),
            max_seconds=float(config.get("MAX_SECONDS", cls.max_seconds)),
            extract_processes=int(config.get("EXTRACT_PROCESSES", cls.extract_processes)),
        )

    def digest(self) -> str:
        """Return the hash of the settings that can change the facts (the budgets only pass or fail a job)."""
        shaping = {"exclude": list(self.exclude), "honour_gitignore": self.honour_gitignore, "max_file_bytes": self.max_file_bytes}
        return hashlib.sha256(json.dumps(shaping, sort_keys=True).encode()).hexdigest()
