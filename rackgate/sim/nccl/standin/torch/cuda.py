"""No GPUs in the sim's stand-in torch: the probe's backend 'auto' picks gloo."""


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def set_device(device) -> None:
    raise RuntimeError("the sim's stand-in torch has no CUDA/HIP device")


def synchronize() -> None:
    return None
