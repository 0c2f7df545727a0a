"""Where one item of a declared check looks (rackgate/gates/declare.py): a node, or one GPU of it.

The pytest items build it from their `node` / `gpu` fixtures; a probe reads through `host` (or
`container()`), and names what it read with `where`.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..access import NodeAccess
from ..config.model import Rack
from .drm import Card, where


@dataclass(frozen=True)
class On:
    rack: Rack
    host: NodeAccess
    node: str
    gpu: int | None = None  # GPU g of the node (PCI order), for a per-GPU check
    card: Card | None = None  # its DRM card, discovered

    def container(self, env: dict[str, str] | None = None) -> NodeAccess:
        """Where the engine runs on this node: its container, or the node itself (container = "")."""
        return self.host.container(self.rack.container, self.rack.node(self.node).container_sysroot, env)

    @property
    def where(self) -> str:
        """For messages: node2, or node2/gpu3 (card4, 0000:75:00.0)."""
        if self.gpu is None or self.card is None:
            return self.node
        return where(self.node, self.gpu, self.card.card, self.card.bdf)

    @property
    def key(self) -> str:
        """For facts and baselines: node2, or the GPU-numbered node2/card3 (stable across renumbered cards)."""
        return self.node if self.gpu is None else f"{self.node}/card{self.gpu}"
