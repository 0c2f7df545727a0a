"""The simulated node's NCCL, for torch.distributed inside the sim's container.

The sim has no GPUs, so collectives run on gloo underneath; this layer adds what the node's
NCCL would show: with NCCL_DEBUG=INFO the transport lines (`NCCL INFO Channel 00/0 : 0[0] ->
1[1] via P2P/CUMEMMNNVL`, or `NCCL INFO Using network Socket` + `via NET/Socket/0` when the
node's fabric falls back), and, when the node's fabric is faulted so that the collective kernel
never runs, an all_reduce that never completes: after the process group's timeout the NCCL
watchdog's lines (`... last completed NCCL work: -1.`), then nothing, forever.

It is on PYTHONPATH of sim nodes only (rackgate/sim/render.py) and does nothing unless
torch.distributed is imported there. Behaviour comes from node["fabric"] in the sim state.

The sim's fabric has a rate: an all_reduce of S bytes over n ranks takes at least
S x 2(n-1)/n / (LINK_GBPS x fabric.collective_factor) seconds (the bus bandwidth a real fabric
would carry it at), so the probe's timing measures the sim's fabric, not the loaded CPU that runs
the ranks; the rate is low enough for the stand-in's python reduction to stay well under it.

The sim node's torch: by default the sim's stand-in (rackgate/sim/nccl/standin/torch: a CPU
tensor and a gloo-like torch.distributed whose ranks really rendezvous and reduce over TCP), so
the sim behaves the same on every machine, with or without torch installed (a real rack's
container has ROCm torch; the README's first command installs none). RACKGATE_SIM_TORCH=installed
gives the sim's nodes the machine's own torch instead, from the machine's site-packages (the
container's python has none of its own), and the NCCL behaviour below applies to both.

The sim's transport faults (node["fabric"], rackgate/sim/faults/fab.py), acting on the data the
collectives carry, whoever calls them (FAB-DATACHECK's probe runs with the machine's torch: the
stand-in has no all_to_all):
  corrupt    {gpu: {"above": bytes, "after": calls}}: what lands on that GPU in a collective of
             more than `above` bytes arrives with a run of wrong elements, from the call
             `after`+1 of that collective and size on;
  wrong_peer [gpu]: that GPU's all_to_all sends the tokens meant for rank d+1 to rank d;
  drop_link  {gpu: ["node3/gpu0", ...]}: the link between that GPU and each peer drops its
             traffic: a collective of a world holding both never completes on that GPU. A rank
             knows its world's GPUs from the store the process group was made with (each rank
             publishes its node/gpu there at init, as the sim's wiring).
"""
import os
import sys

if os.environ.get("RACKGATE_SIM_NODE"):
    if os.environ.get("RACKGATE_SIM_TORCH", "standin") != "installed":
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "standin"))
    elif sys.prefix != sys.base_prefix:
        # the container's python has a prefix of its own (rackgate/sim/areas/plat.py): the
        # machine's torch is in the machine's site-packages (its python3 is where the link points:
        # a venv's or the base's)
        import site

        exe = os.readlink(sys.executable) if os.path.islink(sys.executable) else sys.executable
        for d in site.getsitepackages([os.path.dirname(os.path.dirname(exe)), sys.base_prefix]):
            site.addsitedir(d)

    TARGET = "torch.distributed.distributed_c10d"
    LINK_GBPS = 0.00025  # the sim fabric's bus bandwidth for a collective, GB/s (x fabric.collective_factor)

    def _fabric() -> dict:
        try:
            from rackgate.sim.state import this_node
            return this_node()[1].get("fabric", {})
        except Exception:  # noqa: BLE001 - a broken sim state must not break torch
            return {}

    def _me() -> str:
        """node/gpuN of this rank (the node's directory name, LOCAL_RANK)."""
        node = os.path.basename(os.environ["RACKGATE_SIM_NODE"].rstrip("/"))
        return f"{node}/gpu{int(os.environ.get('LOCAL_RANK', '0'))}"

    def _say(line: str, fd: int = 1) -> None:
        """One line in one write(2): the ranks share the probe's stdout, and print() may write a
        line and its newline apart, so two ranks' lines could run together."""
        (sys.stdout if fd == 1 else sys.stderr).flush()
        os.write(fd, (line + "\n").encode())

    def _patch(mod) -> None:
        import datetime
        import socket
        import time

        orig_init, orig_all_reduce = mod.init_process_group, mod.all_reduce
        pg: dict = {"timeout": 1800.0}
        calls: dict = {}

        def init_process_group(*args, **kwargs):
            t = kwargs.get("timeout")
            if isinstance(t, datetime.timedelta):
                pg["timeout"] = t.total_seconds()
            out = orig_init(*args, **kwargs)
            ws, rank = mod.get_world_size(), mod.get_rank()
            pg.pop("world", None)
            pg["fabric"] = _fabric()  # the node's fabric as the group was made (read once, not per collective)
            pg["store"] = kwargs.get("store")
            if pg["store"] is not None and ws > 1:  # the sim's wiring: which GPU holds which rank
                pg["store"].set(f"rgsim/who/{rank}", _me())
            if ws > 1 and os.environ.get("NCCL_DEBUG", "").upper() == "INFO":
                fab = pg["fabric"]
                local = int(os.environ.get("LOCAL_RANK", rank))
                pre = f"{socket.gethostname()}:{os.getpid()}:{os.getpid()} [{local}] NCCL INFO"
                peer = (rank + 1) % ws
                if fab.get("transport", "P2P/CUMEMMNNVL").startswith("NET/Socket"):
                    _say(f"{pre} Using network Socket")
                    _say(f"{pre} Channel 00/0 : {rank}[{local}] -> {peer}[{peer}] [send] via NET/Socket/0")
                else:
                    _say(f"{pre} Channel 00/0 : {rank}[{local}] -> {peer}[{peer}] via "
                         f"{fab.get('transport', 'P2P/CUMEMMNNVL')}")
            return out

        def _dropped(fab: dict, ws: int) -> bool:
            """A link of this GPU that drops traffic leads to a GPU of this world."""
            peers = fab.get("drop_link", {}).get(_me().rsplit("gpu", 1)[1])
            if not peers or ws < 2 or pg.get("store") is None:
                return False
            if "world" not in pg:
                pg["world"] = {pg["store"].get(f"rgsim/who/{r}").decode() for r in range(ws)}
            return any(p in pg["world"] for p in peers)

        def _size(*tensors) -> int:
            return max((t.numel() * t.element_size() for t in tensors if hasattr(t, "element_size")), default=0)

        def _corrupt(fab: dict, name: str, out, size: int) -> None:
            """The wrong elements landing on a faulty GPU (a run of them, a third into the buffer)."""
            cfg = fab.get("corrupt", {}).get(_me().rsplit("gpu", 1)[1])
            if not cfg or not hasattr(out, "view") or size <= int(cfg.get("above", 0)):
                return
            key = (name, size)
            calls[key] = calls.get(key, 0) + 1
            if calls[key] <= int(cfg.get("after", 0)) or out.numel() == 0:
                return
            flat = out.view(-1)
            lo = flat.numel() // 3
            flat[lo:lo + max(1, flat.numel() // 64)] += 1

        def _misaddressed(inp, splits):
            """The tokens meant for rank d+1 put in rank d's slot (what a wrong rank map does)."""
            torch = sys.modules["torch"]
            segs = list(torch.split(inp, list(splits)))
            out = []
            for d, n in enumerate(splits):
                src = segs[(d + 1) % len(segs)]
                out.append(src.repeat(n // max(1, src.numel()) + 1)[:n] if src.numel() else inp.new_zeros(n))
            return torch.cat(out) if out else inp

        def _hang_forever() -> None:
            while True:  # the traffic is dropped: nothing ever completes here
                time.sleep(3600)

        def _carried(name: str, orig):
            """A collective as the sim's fabric carries it: dropped, misaddressed or corrupted."""
            def collective(*args, **kwargs):
                ws = mod.get_world_size()
                fab = pg.get("fabric") or {}
                if _dropped(fab, ws):
                    _hang_forever()
                args = list(args)
                if name == "all_to_all_single" and ws > 1 and int(_me().rsplit("gpu", 1)[1]) in fab.get("wrong_peer", []):
                    splits = args[3] if len(args) > 3 else kwargs.get("input_split_sizes")
                    if splits:
                        args[1] = _misaddressed(args[1], splits)
                out = orig(*args, **kwargs)
                if ws > 1 and args:
                    _corrupt(fab, name, args[0], _size(*args[:2]))
                return out
            collective.__name__ = name
            return collective

        def all_reduce(tensor, *args, **kwargs):
            ws, rank = mod.get_world_size(), mod.get_rank()
            fab = pg["fabric"] if "fabric" in pg else _fabric()
            if _dropped(fab, ws):
                _hang_forever()
            if ws > 1 and fab.get("collective_hang"):
                t0 = time.monotonic()
                time.sleep(pg["timeout"])
                ran = int((time.monotonic() - t0) * 1000)
                stamp = time.strftime("%m%d %H:%M:%S") + f".{int(time.time() * 1e9) % 10**9:09d}"
                n = tensor.numel()
                _say(f"[rank{rank}]:[E{stamp} ProcessGroupNCCL.cpp:607] [Rank {rank}] Watchdog caught collective "
                     f"operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn={n}, NumelOut={n}, "
                     f"Timeout(ms)={int(pg['timeout'] * 1000)}) ran for {ran} milliseconds before timing out.", 2)
                _say(f"[rank{rank}]:[E{stamp} ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank {rank}] Exception "
                     "(either an error or timeout) detected by watchdog at work: 1, last enqueued NCCL work: 1, "
                     "last completed NCCL work: -1.", 2)
                while True:
                    time.sleep(3600)
            t0 = time.monotonic()
            out = orig_all_reduce(tensor, *args, **kwargs)
            if ws > 1:
                _corrupt(fab, "all_reduce", tensor, _size(tensor))
                gbps = LINK_GBPS * float(fab.get("collective_factor", 1.0))
                floor = tensor.numel() * 4 * 2 * (ws - 1) / ws / (gbps * 1e9)
                time.sleep(max(0.0, floor - (time.monotonic() - t0)))
            return out

        mod.init_process_group, mod.all_reduce = init_process_group, all_reduce
        for name in ("all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all_single"):
            if hasattr(mod, name):  # the stand-in torch has none of them
                setattr(mod, name, _carried(name, getattr(mod, name)))

    class _Finder:
        """A meta path finder (find_spec is the whole protocol). Every Python process on a sim node
        starts through here, most of them never importing torch: importlib.util is imported only
        when the target is."""

        def find_spec(self, name, path, target=None):
            if name != TARGET:
                return None
            import importlib.util

            sys.meta_path.remove(self)
            try:
                spec = importlib.util.find_spec(name)
            finally:
                sys.meta_path.insert(0, self)
            if spec is None or spec.loader is None:
                return spec
            loader = spec.loader
            orig_exec = loader.exec_module

            def exec_module(module):
                orig_exec(module)
                _patch(module)

            loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _Finder())
