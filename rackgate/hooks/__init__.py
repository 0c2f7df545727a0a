"""rackgate's pytest hooks, one module per concern (registered by rackgate/pytest_plugin.py); the fixtures
and the state the hooks share with them are rackgate/fixtures' modules of the same names."""
