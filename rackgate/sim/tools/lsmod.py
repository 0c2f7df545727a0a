"""lsmod: the real column layout (Module, Size, Used by)."""
from ..nodeview import this_node

SIZES = {"amdgpu": 19615744, "ifoe": 454656, "amdxcp": 12288, "drm_buddy": 20480, "gpu_sched": 61440}


def main() -> None:
    _, node, _ = this_node()
    print(f"{'Module':<28}{'Size':>8}  Used by")
    for m in node["modules"]:
        print(f"{m:<28}{SIZES.get(m, 16384):>8}  0")


if __name__ == "__main__":
    main()
