"""What the user overrides on the command line, written into the Rack once.

The report, SRV-LAUNCH-LINT and the client read the Rack, never the options:
- `--atom-url URL` -> `server.attach_url` (attach to that server; the suite launches nothing);
- `--served-model NAME` (with `--atom-url`) -> `server.served_model`;
- `--tokenizer PATH` -> `serving.tokenizer` (SRV-STREAM-CONSISTENCY counts the answer's tokens with it);
- the launch environment as the server is launched with it -> `launch.env`: the rack file's
  `[launch.env]` plus `ATOM_LOG_MORE=1` under `launch.rank_labels` (unless the file sets it).

`apply` is idempotent: the sim's build replaces sections of the rack (a fault may set
`launch.env`), so the built rack goes through it again.
"""
from __future__ import annotations

from .model import Rack
from .serving import Launch


def launch_env(launch: Launch) -> dict[str, str]:
    """The environment the server is launched with."""
    env = dict(launch.env)
    if launch.rank_labels:
        env.setdefault("ATOM_LOG_MORE", "1")
    return env


def apply(rack: Rack, atom_url: str | None = None, served_model: str | None = None,
          tokenizer: str | None = None) -> Rack:
    server = rack.server
    serving = rack.serving.model_copy(update={"tokenizer": tokenizer}) if tokenizer else rack.serving
    if atom_url:
        server = server.model_copy(update={"attach_url": atom_url,
                                           "served_model": served_model or server.served_model})
    return rack.model_copy(update={"server": server, "serving": serving,
                                   "launch": rack.launch.model_copy(update={"env": launch_env(rack.launch)})})
