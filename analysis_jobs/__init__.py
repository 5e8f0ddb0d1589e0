"""Durable, leased, cancellable repository-analysis jobs with the database row as the only source of truth."""
