"""The benchmark suite: ``scripts/bench`` runs it and writes BENCHMARKS.md (see ``bench.run``)."""
