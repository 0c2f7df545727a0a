"""Read-only observations: raw output in, typed facts out. A probe never decides pass/fail."""
