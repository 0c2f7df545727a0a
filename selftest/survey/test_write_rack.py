"""--write-rack on a real rack file: every table and key kept as written, [[nodes]] narrowed to the
chosen trays (in tray order), launch.head dropped when the head is not chosen; the suite's loader
accepts the result."""
import tomllib

import pytest

from rackgate import config
from rackgate.survey.rackfile import dumps, write_rack

from ..harness import REPO

pytestmark = pytest.mark.unit

EXAMPLE = REPO / "racks" / "example-gfx1250.toml"


def test_real_rack_narrowed_with_every_value_kept(tmp_path):
    src = tomllib.loads(EXAMPLE.read_text())
    out = tmp_path / "set.toml"
    write_rack(out, EXAMPLE, config.load(EXAMPLE), ("ct4", "ct2"), simulated=False)
    got = tomllib.loads(out.read_text())
    assert [n["name"] for n in got["nodes"]] == ["ct2", "ct4"]
    assert got["nodes"] == [n for n in src["nodes"] if n["name"] in ("ct2", "ct4")]
    assert "head" not in got["launch"]                       # ct1 is not in the set
    assert {k: v for k, v in got["launch"].items()} == {k: v for k, v in src["launch"].items() if k != "head"}
    for table in set(src) - {"nodes", "launch", "name"}:
        assert got[table] == src[table], table
    assert config.load(out).nodes[0].tray == src["nodes"][1]["tray"]


def test_head_kept_when_chosen(tmp_path):
    out = tmp_path / "set.toml"
    write_rack(out, EXAMPLE, config.load(EXAMPLE), ("ct1", "ct3"), simulated=False)
    assert config.load(out).launch.head == "ct1"


def test_toml_writer_round_trips():
    data = {"a": 1, "b": "x \"q\" \\ y", "c": [1.5, 2], "t": {"d": True, "e": {"f": "g"}, "empty": {}},
            "arr": [{"name": "n1", "env": {"K": "v"}}, {"name": "n2"}]}
    assert tomllib.loads(dumps(data)) == data
