"""The sim's stand-in for torch, for the collective probe on a machine without torch.

The sim's "containers" are processes on the machine that runs the suite. A real rack's container
has ROCm torch; this machine may have none (the README's first command installs no torch), so
the sim's node python gets this package instead (rackgate/sim/nccl/sitecustomize.py puts it on
the path; RACKGATE_SIM_TORCH=installed uses the machine's own torch instead).

It is not a fake result: it holds only what the probe touches, and its collectives really run
between the probe's forked rank processes over TCP (torch.distributed, here: a TCPStore
rendezvous and a ring all_reduce over sockets, gloo-like). A rank that never joins, a socket
that never answers or a hung collective behave as they would with gloo: the rendezvous and the
collective are bounded by the timeouts the caller gives.
"""
from . import cuda, distributed  # noqa: F401

__version__ = "0+rackgate.sim.standin"
float32 = "float32"


class Tensor:
    """A flat CPU tensor of floats: what the probe builds, reduces and reads back."""

    def __init__(self, data, device="cpu"):
        self._d = [float(x) for x in data]
        self.device = device

    def numel(self) -> int:
        return len(self._d)

    def tolist(self) -> list[float]:
        return list(self._d)

    def item(self) -> float:
        if len(self._d) != 1:
            raise RuntimeError(f"a Tensor with {len(self._d)} elements cannot be converted to Scalar")
        return self._d[0]

    def __getitem__(self, i):
        return Tensor([self._d[i]], self.device)

    def __len__(self) -> int:
        return len(self._d)

    def _op(self, other, f):
        if isinstance(other, Tensor):
            return Tensor([f(a, b) for a, b in zip(self._d, other._d, strict=True)], self.device)
        return Tensor([f(a, other) for a in self._d], self.device)

    def __mul__(self, other):
        return self._op(other, lambda a, b: a * b)

    __rmul__ = __mul__

    def __add__(self, other):
        return self._op(other, lambda a, b: a + b)

    __radd__ = __add__

    def __repr__(self) -> str:
        return f"tensor({self._d[:4]}{'...' if len(self._d) > 4 else ''}, device={self.device!r})"


def _device(device) -> str:
    d = str(device or "cpu")
    if d != "cpu":
        raise RuntimeError(f"the sim's stand-in torch has no device {d!r} (CPU only)")
    return d


def ones(n: int, device=None, dtype=None) -> Tensor:
    return Tensor([1.0] * int(n), _device(device))


def zeros(n: int, device=None, dtype=None) -> Tensor:
    return Tensor([0.0] * int(n), _device(device))


def tensor(data, device=None, dtype=None) -> Tensor:
    return Tensor(data if isinstance(data, (list, tuple)) else [data], _device(device))
