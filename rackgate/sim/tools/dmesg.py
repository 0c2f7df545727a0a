"""dmesg: kernel ring buffer lines '[seconds.micros] text', as the real tool prints by default.

Supports the options probes use: --time-format iso (util-linux), -T is treated the same way.
"""
import sys

from ..nodeview import this_node


def main() -> None:
    _, node, _ = this_node()
    iso = "--time-format" in sys.argv and "iso" in sys.argv
    if iso:
        from datetime import datetime, timezone
    for t, line in node["dmesg"]:
        if iso:
            ts = datetime.fromtimestamp(node["boot_time"] + t, timezone.utc).astimezone()
            print(f"{ts.isoformat(timespec='microseconds').replace('.', ',')} {line}")
        else:
            print(f"[{t:12.6f}] {line}")


if __name__ == "__main__":
    main()
