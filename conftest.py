"""Thin: the suite's fixtures and hooks live in fixtures/ (one module per concern)."""
pytest_plugins = [
    "fixtures.rack",
    "fixtures.nodes",
    "fixtures.server",
    "fixtures.xdist_server",
    "fixtures.labels",
    "fixtures.baseline",
    "fixtures.regression",
    "fixtures.report",
    "fixtures.fabric",
    "fixtures.rackmap",
    "fixtures.ubench_plan",
    "fixtures.verdict_file",
    "fixtures.gate_results",
]
