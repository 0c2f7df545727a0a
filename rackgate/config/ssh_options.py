"""Whether the system ssh client knows the rack file's [ssh] options: asked when a rack file is
loaded (config.parse), outside the rack-file model, so the model (which the judgments read) starts
no process."""
from __future__ import annotations

import shutil
import subprocess


def unknown(opts: list[str]) -> str:
    """Ask the system ssh client whether it knows each option (`ssh -G` parses, connects nowhere);
    "" when it does, or when there is no ssh client here to ask."""
    ssh = shutil.which("ssh")
    if not ssh or not opts:
        return ""
    for o in opts:
        try:
            res = subprocess.run([ssh, "-F", "/dev/null", "-G", "-o", o, "rackgate-option-check"],
                                 capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        if res.returncode != 0:
            said = (res.stderr.strip().splitlines() or ["rejected"])[0]
            return f"{o!r} is not an option ssh accepts: {said}"
    return ""
