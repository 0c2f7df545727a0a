"""The markers' hook: every item of a catalogue row gets its row's -m markers (an unknown row is a
usage error naming the item); the Allure labels and `evidence` fixtures are
rackgate/fixtures/labels.py's."""
from __future__ import annotations

import pytest

from rackgate.catalogue import UnknownRow, row
from rackgate.fixtures.labels import row_of


def pytest_collection_modifyitems(config, items):
    for item in items:
        rid = row_of(item)
        if rid is None:
            continue
        try:
            r = row(rid)
        except UnknownRow as e:
            raise pytest.UsageError(f"{item.nodeid}: {e}") from None
        for m in r.markers:
            item.add_marker(getattr(pytest.mark, m))
