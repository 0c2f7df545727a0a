"""Which DRM card is which GPU: discovered from /sys/class/drm, never assumed to be card{g}.

The kernel's sysfs shape: /sys/class/drm holds one entry per DRM minor -- cardN (primary
node), cardN-CONNECTOR (a display connector, e.g. card0-VGA-1), renderDN, version. cardN's
`device` is a link to its PCI device (`../../../0000:75:00.0`: the name is the PCI address)
and `device/driver` a link to the bound driver (`.../bus/pci/drivers/amdgpu`). A node's GPUs
are the cards bound to amdgpu (or carrying amdgpu's `device/ualink` directory), in PCI order;
GPU g is the g-th. Anything else (a BMC's ASPEED `ast` video card often holds card0) is not a
GPU and moves the GPUs' card numbers up.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..access import NodeAccess
from ..errors import CouldNotObserve, UnrecognisedOutput

GPU_DRIVER = "amdgpu"
CARD_RE = re.compile(r"card(\d+)")
BDF_RE = re.compile(r"([0-9a-f]{4,8}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])")
NO_DRM = "__rackgate_no_drm__"
END = "__rackgate_end__"
# One line per primary card: name <TAB> device link <TAB> driver link <TAB> "ualink" or "", then
# the end marker. Connectors (cardN-XXX) and render nodes are not cards; a link that is not there
# reads "". No readlink, or a directory it cannot list, exits non-zero; a reply without the end
# marker never came whole: never an empty (zero-GPU) listing.
_LIST = ('d="$1"; [ -d "$d" ] || { echo "$2"; exit 0; }; command -v readlink >/dev/null || exit 127; '
         '[ -r "$d" ] && [ -x "$d" ] || { echo "cannot list $d" >&2; exit 3; }; '
         'for c in "$d"/card*; do [ -e "$c" ] || continue; '
         'n="${c##*/}"; case "$n" in *-*) continue;; esac; u=""; [ -d "$c/device/ualink" ] && u=ualink; '
         'printf "%s\\t%s\\t%s\\t%s\\n" "$n" "$(readlink "$c/device")" "$(readlink "$c/device/driver")" "$u"; done; echo "$3"')


class CardCount(CouldNotObserve):
    """The node shows more or fewer amdgpu cards than gpus_per_node: which card is GPU g cannot be
    told (a per-GPU check could not observe; the count itself is PLAT-GPUS's finding)."""

    def __init__(self, node: str, gpu: int, found: str):
        super().__init__(f"{node}/gpu{gpu}: which DRM card is this GPU cannot be told: {found} (PLAT-GPUS)")
        self.found = found


@dataclass(frozen=True)
class Card:
    card: int          # N of /sys/class/drm/cardN
    bdf: str | None    # PCI address (the device link's name), None when not a PCI device
    driver: str | None # the bound driver's name, None when unbound
    ualink: bool = False

    @property
    def is_gpu(self) -> bool:
        return self.driver == GPU_DRIVER or self.ualink

    def summary(self) -> str:
        return f"card{self.card} {self.bdf or '(no PCI address)'} driver={self.driver or '(none)'}"


def pci_key(bdf: str) -> tuple[int, ...]:
    m = BDF_RE.fullmatch(bdf)
    return tuple(int(x, 16) for x in m.groups())  # type: ignore[union-attr]


def _base(link: str) -> str:
    return link.rstrip("/").rsplit("/", 1)[-1]


def parse_listing(text: str, where: str) -> list[Card]:
    """The listing script's lines -> every primary card, by card number. A line not of its shape
    is an output the suite does not recognise (could not observe), never a shorter list."""
    cards = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split("\t")
        m = CARD_RE.fullmatch(parts[0]) if len(parts) == 4 else None
        if m is None or parts[3] not in ("", "ualink"):
            raise UnrecognisedOutput(f"{where}: /sys/class/drm listing line not understood: {line[:120]!r}")
        dev = _base(parts[1]).lower()
        bdf = dev if BDF_RE.fullmatch(dev) else None
        cards.append(Card(int(m.group(1)), bdf, _base(parts[2]) or None, parts[3] == "ualink"))
    return sorted(cards, key=lambda c: c.card)


@dataclass(frozen=True)
class GpuMap:
    """A node's GPUs in PCI order (GPU g = gpus[g]) and its other DRM cards."""
    node: str
    gpus: tuple[Card, ...]
    others: tuple[Card, ...] = ()

    @classmethod
    def of(cls, node: str, cards: list[Card]) -> "GpuMap":
        gpus = [c for c in cards if c.is_gpu]
        odd = [c for c in gpus if c.bdf is None]
        if odd:
            raise UnrecognisedOutput(f"node {node}: /sys/class/drm/card{odd[0].card} is bound to {odd[0].driver} "
                                     "but its device link names no PCI address: the GPUs' PCI order is unknown")
        return cls(node, tuple(sorted(gpus, key=lambda c: pci_key(c.bdf or ""))), tuple(c for c in cards if not c.is_gpu))

    def mismatch(self, expected: int) -> str | None:
        """PLAT-GPUS's finding when the node shows more or fewer amdgpu cards than expected."""
        if len(self.gpus) == expected:
            return None
        shown = ", ".join(c.summary() for c in self.gpus) or "none"
        other = f"; other DRM cards: {', '.join(c.summary() for c in self.others)}" if self.others else ""
        return (f"{len(self.gpus)} DRM cards bound to amdgpu in /sys/class/drm, expected {expected} "
                f"(gpus_per_node): {shown}{other}")

    def card(self, gpu: int, expected: int) -> Card:
        """GPU g's card; could not observe when the node does not show exactly `expected` GPUs
        (which card is GPU g is then unknown: PLAT-GPUS says why)."""
        found = self.mismatch(expected)
        if found:
            raise CardCount(self.node, gpu, found)
        return self.gpus[gpu]

    def where(self, gpu: int, expected: int) -> str:
        c = self.card(gpu, expected)
        return where(self.node, gpu, c.card, c.bdf)


def label(gpu: int | None, card: int, bdf: str | None) -> str:
    """'gpu3 (card4, 0000:75:00.0)'; a card not known as a GPU is named by its card alone."""
    return f"card{card}" if gpu is None else f"gpu{gpu} (card{card}, {bdf})"


def where(node: str, gpu: int | None, card: int, bdf: str | None) -> str:
    """'node2/gpu3 (card4, 0000:75:00.0)'."""
    return f"{node}/{label(gpu, card, bdf)}"


def read_drm(host: NodeAccess, script: str, what: str, *args: str, timeout: float = 30) -> str:
    """Run a script over /sys/class/drm ($1; it prints $2 when there is none and ends with $3,
    then takes `args`) and return what it printed, in node paths. `what` names the reading."""
    res = host.shell(script, host.path("/sys/class/drm"), NO_DRM, END, *args, timeout=timeout)
    if not res.ok:
        raise CouldNotObserve(f"node {host.name}: {what} failed (rc {res.rc}): {res.stderr.strip()[:200]}")
    if res.stdout.strip() == NO_DRM:
        raise CouldNotObserve(f"node {host.name}: no /sys/class/drm for {what}")
    if not res.stdout.endswith(END + "\n"):
        raise UnrecognisedOutput(f"node {host.name}: {what} did not come back whole: {res.came_back()}")
    return host.node_text(res.stdout.removesuffix(END + "\n"))


def discover(host: NodeAccess) -> GpuMap:
    text = read_drm(host, _LIST, "listing /sys/class/drm")
    return GpuMap.of(host.name, parse_listing(text, f"node {host.name}"))
