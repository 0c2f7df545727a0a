"""The ATOM commit the image holds (PLAT-ATOM-COMMIT, and provenance for the regression table).

ATOM's own Dockerfile clones ATOM with git, checks out the commit it was given and installs it in
place (`git clone`, `git checkout $ATOM_COMMIT`, `pip install -e .`), so the image's ATOM tree is
a git checkout whose HEAD is that commit: `git -C <atom_path> rev-parse HEAD` prints it (40 hex
digits; 64 in a SHA-256 repository). A patched tree (PR #2380 applied as a diff) keeps its HEAD.
No git, no checkout, or any other answer is could-not-observe, never a commit.
"""
from __future__ import annotations

import re

from ..access import NodeAccess
from ..errors import CouldNotObserve, UnrecognisedOutput
from .target import On

COMMIT = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


def command(host: NodeAccess, atom_path: str) -> list[str]:
    # safe.directory: the image's tree may belong to another uid than the one exec runs as;
    # given on the command line, it changes no configuration in the container.
    return ["git", "-c", "safe.directory=*", "-C", host.path(atom_path.rstrip("/") or "/"), "rev-parse", "HEAD"]


def read(host: NodeAccess, atom_path: str, timeout: float = 60) -> tuple[str, str]:
    """(commit, evidence) of the ATOM tree at atom_path in the container `host`."""
    res = host.run(command(host, atom_path), timeout=timeout).require("git")
    out = res.stdout.strip()
    if not COMMIT.match(out):
        raise UnrecognisedOutput(f"node {res.node}: `git rev-parse HEAD` in {atom_path} printed no commit id: "
                                 f"{out[:120]!r}")
    return out, host.node_text(res.evidence())


def commit(on: On) -> tuple[str, str]:
    """PLAT-ATOM-COMMIT's probe: (commit, evidence) of the rack file's atom_path in the node's container."""
    if not on.rack.atom_path:
        raise CouldNotObserve(f"{on.node}: the rack file sets no atom_path: no ATOM tree to read the commit of")
    return read(on.container(), on.rack.atom_path)
