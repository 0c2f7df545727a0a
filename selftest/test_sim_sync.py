"""The sim's node render (rackgate/sim/areas/plat.py `_sync`) on a tree that is already there, as the
link-training agent's re-render finds it: what the render no longer holds goes (files, directories,
symlinks, deepest first), what it holds or keeps stays, what lies outside its subtrees is untouched;
and the stand-in files' padding (rackgate/sim/plat_content.py `pad`) is exact to the byte."""
import os

import pytest

pytestmark = pytest.mark.unit


def test_a_re_render_removes_what_the_render_no_longer_holds(tmp_path):
    from rackgate.sim.areas.plat import _sync
    root = tmp_path / "root"
    first = {"proc/1/stat": (b"1 (init)\n", None), "proc/2/stat": (b"2 (x)\n", None),
             "proc/2/deep/er/file": (b"x", None), "dev/shm": (None, None), "dev/shm/seg": (4096, 1_000_000)}
    _sync(root, first, ["proc", "dev/shm"])
    assert (root / "proc/2/deep/er/file").read_bytes() == b"x"
    assert (root / "dev/shm/seg").stat().st_size == 4096 and (root / "dev/shm/seg").stat().st_mtime == 1_000_000
    (root / "proc/2/link").symlink_to(root / "proc/2/deep")    # a symlink to a directory: unlinked, not followed
    (root / "proc/dangling").symlink_to(root / "nowhere")
    (root / "outside").mkdir()
    (root / "outside/mine").write_text("not the render's")
    (root / "proc/kept").write_text("a fault's file")
    _sync(root, {"proc/1/stat": (b"1 (init)\n", None), "dev/shm": (None, None)}, ["proc", "dev/shm"],
          keep=(root / "proc/kept",))
    left = sorted(os.path.relpath(os.path.join(d, n), root) for d, ds, fs in os.walk(root) for n in ds + fs)
    assert left == ["dev", "dev/shm", "outside", "outside/mine", "proc", "proc/1", "proc/1/stat", "proc/kept"]
    assert (root / "outside/mine").read_text() == "not the render's"


@pytest.mark.parametrize("text", ["", "x", "# é\n"])
def test_pad_is_the_text_then_comment_lines_to_the_byte(text):
    from rackgate.sim.plat_content import pad
    body = text.encode()
    for size in [*range(len(body), len(body) + 170), 7499, 146235]:
        got = pad(text, size)
        assert len(got) == size and got.startswith(body)
        lines = got[len(body):].split(b"\n")
        assert lines[-1] == b"" and all(len(x) <= 79 and set(x) <= {ord("#")} for x in lines)
        assert all(len(x) == 79 for x in lines[:-2])
    with pytest.raises(ValueError):
        pad("abc", 2)
