"""
Signals other Django apps connect to: one is sent once per job that finishes, after the transaction that
finished it commits, with ``job_id`` (the sender is ``AnalysisJob``). A receiver that raises does not undo the
finish: the row is already committed.
"""

from django.dispatch import Signal

analysis_completed = Signal()
analysis_failed = Signal()
analysis_cancelled = Signal()
