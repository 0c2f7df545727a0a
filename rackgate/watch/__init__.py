"""`rackgate watch`: re-run what expired or failed on a cadence (cycle.py: one cycle -- what is due,
one run of it, the merge, the history, the metrics; cli.py: the loop, the lock, the signals).
docs/operations.md."""
