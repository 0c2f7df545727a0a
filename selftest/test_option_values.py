"""rackgate/pytest_plugin.py's check_options: an --atom-url is an http(s) URL with a host (and a
port that is one); anything else is one usage line."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from rackgate.pytest_plugin import check_options, marker_names

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("url", ["http://10.210.11.19:8000", "https://atom.example:443/", "http://h", "http://[::1]:8000"])
def test_a_server_url_is_taken(url):
    check_options(SimpleNamespace(atom_url=url, baseline=None))


@pytest.mark.parametrize("url", ["10.210.11.19:8000", "atom", "", "ftp://h:21", "http://", "http://h:99999", "http://h:port"])
def test_anything_else_is_one_line(url):
    with pytest.raises(pytest.UsageError, match=r"^--atom-url .* is not a URL of a server: give http://HOST:PORT$"):
        check_options(SimpleNamespace(atom_url=url, baseline=None))


def test_the_markers_named_are_the_suites():
    assert marker_names()[:6] == ["platform", "fabric", "serving", "accuracy", "gate", "regression"]
    assert "row" not in marker_names() and "row(id)" not in marker_names()
