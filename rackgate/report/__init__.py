"""Verdicts and their words: every failure says what was seen, what it means, what to do."""
