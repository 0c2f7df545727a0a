"""A gloo-like process group for the sim's stand-in torch: ranks are real processes that
rendezvous through the TCPStore, then open real TCP connections in a ring (rank r sends to r+1,
receives from r-1). all_reduce passes every rank's buffer once around the ring; every receive
is bounded by the process group's timeout."""
from __future__ import annotations

import datetime
import socket
import struct
import threading
import time

from .store import TCPStore, _seconds


class ReduceOp:
    SUM, PRODUCT, MIN, MAX = "sum", "product", "min", "max"


_OPS = {ReduceOp.SUM: lambda a, b: a + b, ReduceOp.PRODUCT: lambda a, b: a * b, ReduceOp.MIN: min,
        ReduceOp.MAX: max}
_pg: dict | None = None


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return _pg is not None


def _need() -> dict:
    if _pg is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return _pg


def get_rank() -> int:
    return _need()["rank"]


def get_world_size() -> int:
    return _need()["ws"]


def init_process_group(backend: str = "gloo", init_method=None, timeout=datetime.timedelta(minutes=30),
                       world_size: int = -1, rank: int = -1, store: TCPStore | None = None, **_) -> None:
    global _pg
    if backend not in ("gloo", "cpu:gloo"):
        raise RuntimeError(f"the sim's stand-in torch has only the gloo backend (asked for {backend!r})")
    if store is None:
        raise RuntimeError("the sim's stand-in torch needs an explicit store= (the probe passes a TCPStore)")
    ws, rank, t = int(world_size), int(rank), _seconds(timeout)
    pg = {"ws": ws, "rank": rank, "timeout": t, "send": None, "recv": None}
    if ws > 1:
        # Listen where the store reached us from, publish it, connect to the next rank; the
        # rendezvous is bounded by the store's timeout (its own, longer, for ranks that start late).
        lsock = socket.create_server((store.local_addr, 0))
        store.set(f"rg/addr/{rank}", f"{store.local_addr}:{lsock.getsockname()[1]}")
        host, port = store.get(f"rg/addr/{(rank + 1) % ws}").decode().rsplit(":", 1)
        deadline = time.monotonic() + store.timeout_s
        while True:
            try:
                pg["send"] = socket.create_connection((host, int(port)), timeout=max(0.1, deadline - time.monotonic()))
                break
            except OSError as e:
                if time.monotonic() >= deadline:
                    raise RuntimeError(f"[gloo stand-in] rank {rank}: connect to rank {(rank + 1) % ws} at "
                                       f"{host}:{port} failed within {store.timeout_s:g}s: {e}") from None
                time.sleep(0.05)
        lsock.settimeout(store.timeout_s)
        try:
            pg["recv"], _ = lsock.accept()
        except TimeoutError:
            raise RuntimeError(f"[gloo stand-in] rank {rank}: rank {(rank - 1) % ws} did not connect within "
                               f"{store.timeout_s:g}s") from None
        finally:
            lsock.close()
        for s in (pg["send"], pg["recv"]):
            s.settimeout(t)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    _pg = pg


def _recv_exact(sock: socket.socket, n: int, rank: int, peer: int, t: float) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(n - len(buf))
        except TimeoutError:
            raise RuntimeError(f"[gloo stand-in] rank {rank}: timed out after {t:g}s waiting for rank {peer}") from None
        if not chunk:
            raise RuntimeError(f"[gloo stand-in] rank {rank}: connection closed by rank {peer}")
        buf += chunk
    return bytes(buf)


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    pg = _need()
    ws, rank = pg["ws"], pg["rank"]
    if ws == 1:
        return
    f = _OPS[op]
    n = tensor.numel()
    fmt = f"!{n}d"
    size = struct.calcsize(fmt)
    buf, acc = list(tensor._d), list(tensor._d)
    for _ in range(ws - 1):  # pass each rank's buffer once around the ring
        sent: list[BaseException] = []
        payload = struct.pack(fmt, *buf)

        def send(p=payload, errors=sent):
            try:
                pg["send"].sendall(p)
            except BaseException as e:  # noqa: BLE001 - reported by the caller
                errors.append(e)

        th = threading.Thread(target=send, daemon=True)
        th.start()
        buf = list(struct.unpack(fmt, _recv_exact(pg["recv"], size, rank, (rank - 1) % ws, pg["timeout"])))
        th.join(pg["timeout"])
        if sent or th.is_alive():
            raise RuntimeError(f"[gloo stand-in] rank {rank}: send to rank {(rank + 1) % ws} failed: "
                               f"{sent[0] if sent else 'timed out'}")
        acc = [f(a, b) for a, b in zip(acc, buf)]
    tensor._d[:] = acc


def barrier(group=None) -> None:
    from .. import ones
    all_reduce(ones(1))


def destroy_process_group(group=None) -> None:
    """Close the ring gracefully: stop sending, drain until the peer closed too (bounded)."""
    global _pg
    pg, _pg = _pg, None
    if not pg or pg["ws"] == 1:
        return
    try:
        pg["send"].shutdown(socket.SHUT_WR)
        while pg["recv"].recv(4096):
            pass
    except OSError:
        pass
    finally:
        pg["send"].close()
        pg["recv"].close()
