"""dmesg: kernel ring buffer lines '[seconds.micros] text', as the real tool prints by default.

Supports the options probes use: --time-format iso (util-linux), -T is treated the same way.
Called without options (the product's every read), the node's launcher prints the ring buffer's
text from the node's directory without starting Python (`front`; rackgate/sim/nodeview.py keeps
that file in step with state.json).
"""
import sys

from ..nodeview import KMSG_FILE, kmsg_text, this_node


def front(node) -> str:
    """What the node's `dmesg` launcher runs before it starts this module: no options, the text."""
    kmsg = str(node / KMSG_FILE).replace("'", "'\\''")
    return f"if [ $# -eq 0 ] && [ -f '{kmsg}' ]; then exec cat '{kmsg}'; fi\n"


def main() -> None:
    _, node, _ = this_node()
    iso = "--time-format" in sys.argv and "iso" in sys.argv
    if not iso:
        sys.stdout.write(kmsg_text(node))
        return
    from datetime import datetime, timezone
    for t, line in node["dmesg"]:
        ts = datetime.fromtimestamp(node["boot_time"] + t, timezone.utc).astimezone()
        print(f"{ts.isoformat(timespec='microseconds').replace('.', ',')} {line}")


if __name__ == "__main__":
    main()
