"""torch.distributed of the sim's stand-in torch: a TCPStore and a gloo-like process group."""
from .distributed_c10d import (  # noqa: F401 - the public names, as torch.distributed has them
    ReduceOp,
    all_reduce,
    barrier,
    destroy_process_group,
    get_rank,
    get_world_size,
    init_process_group,
    is_available,
    is_initialized,
)
from .store import TCPStore  # noqa: F401
