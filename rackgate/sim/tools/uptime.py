"""uptime: the node's boot time, as procps prints it (`uptime -s`, `-p`, and the default line)."""
import sys
import time

from ..nodeview import this_node


def main() -> None:
    _, node, _ = this_node()
    boot = node["boot_time"]
    up = time.time() - boot
    args = sys.argv[1:]
    if "-s" in args or "--since" in args:
        print(time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(boot)))
    elif "-p" in args or "--pretty" in args:
        h, m = int(up // 3600), int(up % 3600 // 60)
        parts = ([f"{h} hour{'s' if h != 1 else ''}"] if h else []) + [f"{m} minute{'s' if m != 1 else ''}"]
        print("up " + ", ".join(parts))
    else:
        h, m = int(up // 3600), int(up % 3600 // 60)
        print(f" {time.strftime('%H:%M:%S')} up {h}:{m:02d},  1 user,  load average: 0.08, 0.03, 0.01")


if __name__ == "__main__":
    main()
