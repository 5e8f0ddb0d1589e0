"""The shapes shared by every pipeline: its stages and the state they fill."""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

Check = Callable[[], None]


@dataclass
class AnalysisState:
    """What the stages of one attempt know so far; the worker creates it from the job."""

    source: str
    revision: str = ""
    values: dict[str, Any] = field(default_factory=dict)
    commit: str = ""  # the commit the revision named when the job was queued ('' for a directory)


class SnapshotReused(Exception):
    """A sealed snapshot with this analysis's identity exists: the job completes by pointing at it."""

    def __init__(self, snapshot_id: int):
        super().__init__(snapshot_id)
        self.snapshot_id = snapshot_id


@dataclass(frozen=True, slots=True)
class Stage:
    name: str
    run: Callable[[AnalysisState, Check], None]


class Pipeline(Protocol):
    """What a worker runs. ``summary(state)``, if a pipeline has it, gives what is shown of a sealed snapshot
    without reading its document; it is asked after the document was written. ``sealed(state, snapshot_id)``, if
    it has it, is called once the snapshot is sealed, before the job completes; what it raises is logged only.
    ``stats(state)``, if it has it, gives counts and words (no spaces) that the worker logs once the snapshot is
    sealed, as ``key=value``."""

    stages: Sequence[Stage]

    def document(self, state: AnalysisState) -> dict | Iterable[bytes]:
        """Return the facts document to seal: a dict, or its canonical JSON text as UTF-8 pieces, in order.

        Pieces are stored as they come, so a document given as pieces is never held whole.
        """

    def identity(self, state: AnalysisState) -> str:
        """Return the snapshot identity of this analysis ('' when it has none to reuse)."""
