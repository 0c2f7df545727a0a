"""A sim node's files as sysfs shows them: a reader never sees one empty or half-written while the
link-training agent re-renders the node (rackgate/sim/render.py `_write`). In a survey run under load
a reader saw /sys/module/amdgpu/parameters/mtype_local empty: the file was truncated, then written."""
import pytest

from rackgate.sim import render

pytestmark = pytest.mark.unit


def test_a_changed_file_is_replaced_whole_and_an_unchanged_one_is_left_alone(tmp_path):
    path = tmp_path / "sys/module/amdgpu/parameters/mtype_local"
    render._write(path, "0\n")
    with path.open() as reader:          # a reader that opened the file before the re-render
        render._write(path, "1\n")
        assert reader.read() == "0\n"    # it reads the old text whole (written in place: "" or "1\n")
    assert path.read_text() == "1\n"
    before = path.stat().st_ino
    render._write(path, "1\n")           # unchanged: not rewritten
    assert path.stat().st_ino == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["mtype_local"]  # no temporary file left
