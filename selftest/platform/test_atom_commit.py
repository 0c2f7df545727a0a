"""PLAT-ATOM-COMMIT's probe against the real git on this machine: a detached checkout (as ATOM's
Dockerfile leaves it) answers its commit; no checkout, no git, or a ref that is no commit id is
could-not-observe, never a commit. The sim's nodes hold one ATOM commit and one image id per
image; provenance gives nodes that disagree their own line."""
import subprocess

import pytest

from rackgate.errors import CouldNotObserve, ToolMissing
from rackgate.probes import atom_commit
from rackgate.transport import Host
from rackgate.transport.runners import LocalRunner

pytestmark = pytest.mark.suite

SHA = "4f1c0e2d9b8a7c6e5d4f3a2b1c0d9e8f7a6b5c4d"


def _git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=60,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin", "HOME": str(cwd)})


def test_a_detached_checkout_answers_its_commit(tmp_path):
    tree = tmp_path / "ATOM"
    tree.mkdir()
    _git("init", "-q", cwd=tree)
    (tree / "setup.py").write_text("# atom\n")
    _git("add", ".", cwd=tree)
    _git("commit", "-qm", "x", cwd=tree)
    head = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True,
                          timeout=60).stdout.strip()
    _git("checkout", "-q", "--detach", head, cwd=tree)
    (tree / "setup.py").write_text("# patched\n")  # a diff applied on top keeps HEAD
    got, ev = atom_commit.read(Host("n1", LocalRunner("n1")), str(tree))
    assert got == head and "rev-parse HEAD" in ev


@pytest.mark.parametrize("head, why", [(None, "not a git repository"), ("ref: refs/heads/main\n", "HEAD"),
                                       ("not-a-commit\n", "no commit id")])
def test_no_checkout_is_could_not_observe(tmp_path, head, why):
    if head is not None:
        (tmp_path / ".git" / "objects").mkdir(parents=True)
        (tmp_path / ".git" / "refs").mkdir()
        (tmp_path / ".git" / "HEAD").write_text(head)
    with pytest.raises(CouldNotObserve) as e:
        atom_commit.read(Host("n1", LocalRunner("n1")), str(tmp_path))
    assert "n1" in str(e.value)


def test_no_git_is_tool_missing(tmp_path):
    (tmp_path / ".git" / "objects").mkdir(parents=True)
    (tmp_path / ".git" / "HEAD").write_text(SHA + "\n")
    with pytest.raises(ToolMissing) as e:
        atom_commit.read(Host("n1", LocalRunner("n1", {"PATH": str(tmp_path / "nobin")})), str(tmp_path))
    assert "git" in str(e.value)


