"""Judgments over facts: each returns findings (what is wrong, in words); tests assert on them."""
