"""Node files declared with a fault (rackgate/sim/faults Fault.files, NodeFile): a kernel setting
under /proc/sys, a sysfs attribute. Every node shows the healthy content; a fault's target node the
faulted one (state: Node.files). A new file of this kind needs no code here or in state.py."""
from __future__ import annotations

from pathlib import Path

from ..faults import node_files
from ..render import node_root
from ..state import Node, Rack


def healthy(state: Rack, gpus: int) -> None:
    files = node_files()
    for n in state.nodes.values():
        n.files = dict(files)


def render(rack_dir: Path, name: str, node: Node) -> None:
    root = node_root(rack_dir, name)
    for path, content in node.files.items():
        p = root / path.lstrip("/")
        if p.is_file() and p.read_text() == content:
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(p.name + ".rg-tmp")
        tmp.write_text(content)
        tmp.replace(p)
