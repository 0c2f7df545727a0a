"""The rack file as a validated object. One load function; unknown keys are errors."""
from __future__ import annotations

import os
import re
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from .accuracy import AccuracyExpect
from .base import Section
from .fabric import FabricExpect
from .platform import PlatformExpect
from .regression import RegressionExpect
from .remediate import Remediate
from .serving import Launch, ServingExpect


class Node(Section):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    # "ssh": the system OpenSSH client, so ~/.ssh/config, jump hosts and keys apply.
    # "local": this machine (the simulated rack, or a single-node rack run on the node itself).
    transport: Literal["ssh", "local"] = "ssh"
    # ssh destination as ssh understands it: "root@10.210.11.19" or a Host alias from ~/.ssh/config.
    ssh: str = ""
    # Data-plane address: what ubench07, RCCL and the DP rendezvous use.
    data_ip: str
    # Tray number: accel_id of GPU g is 4*(tray-1)+g.
    tray: int = Field(ge=1)
    # Prefix for absolute paths on the node (the simulated rack, or a captured snapshot).
    sysroot: str = ""
    # Extra environment for commands on this node (exported before each command; values may
    # reference $VARS of the local environment for local nodes).
    env: dict[str, str] = Field(default_factory=dict)
    # Like sysroot, for paths inside the container.
    container_sysroot: str = ""

    @model_validator(mode="after")
    def _target(self) -> Node:
        if self.transport == "ssh" and not self.ssh:
            raise ValueError(f"node {self.name}: transport 'ssh' needs 'ssh' (a destination such as root@host)")
        return self


class Ssh(Section):
    connect_timeout_s: int = Field(default=10, ge=1)
    command_timeout_s: float = Field(default=60.0, gt=0)
    # Extra -o options, each Key=Value of a real ssh option, e.g. ["ProxyJump=jump"]; flags
    # ("-F x", "-v") are refused: use `config` for a separate file. Host-key checking stays as
    # your ssh config has it.
    options: list[str] = Field(default_factory=list)
    control_persist_s: int = Field(default=60, ge=0)
    # A separate ssh config file, passed as `ssh -F FILE` (instead of ~/.ssh/config).
    config: str = ""

    @field_validator("options")
    @classmethod
    def _options(cls, opts: list[str]) -> list[str]:
        for o in opts:
            if o.lstrip().startswith("-"):
                raise ValueError(f"{o!r} is a command-line flag, not an option: write Key=Value "
                                 "(e.g. ProxyJump=jump); a config file goes in [ssh] config")
            if not _SSH_OPTION.fullmatch(o):
                raise ValueError(f"{o!r} is not Key=Value (e.g. ProxyJump=jump)")
        return opts  # whether ssh knows each option is asked when the file is loaded (config/ssh_options.py)

    @field_validator("config")
    @classmethod
    def _config(cls, path: str) -> str:
        if path and not os.path.isfile(os.path.expanduser(path)):
            raise ValueError(f"ssh config file {path!r} does not exist")
        return os.path.expanduser(path) if path else path


_SSH_OPTION = re.compile(r"[A-Za-z][A-Za-z0-9]*=\S.*")


class Server(Section):
    # The name clients send (--served-model-name).
    served_model: str = "kimi-k3"
    # Sent as a bearer token when set; never printed.
    api_key: SecretStr | None = None
    # The running server to attach to: set by --atom-url (rackgate/config/overrides.py), never
    # by the rack file. Empty: the suite launches the server from [launch].
    attach_url: str = ""


class Bench(Section):
    # The benchmark command (benchmark_serving or aiperf) as the user runs it.
    command: str = ""
    # Where the benchmark writes its result file (benchmark_serving --save-result / aiperf artifacts).
    result_path: str = ""


class Sim(Section):
    # Named faults for the simulated rack: "name" or "name@node" or "name@node:gpu".
    faults: list[str] = Field(default_factory=list)
    # How the suite reaches the sim's nodes: "local", or "ssh" through the system OpenSSH client
    # to ssh_target (e.g. root@127.0.0.1 with an sshd on this machine; [ssh] options apply).
    transport: Literal["local", "ssh"] = "local"
    ssh_target: str = "root@127.0.0.1"
    nodes: int = Field(default=4, ge=1, le=64)
    # GSM8K accuracy of the simulated model.
    accuracy: float = Field(default=0.96, ge=0, le=1)
    # Nodes whose /sys/class/drm/card0 is a BMC's video card (ASPEED ast): their GPUs are card1...
    bmc_card0: list[str] = Field(default_factory=list)


class Rack(Section):
    name: str = "rack"
    silicon: Literal["A0", "B0"] = "B0"
    gpus_per_node: int = Field(default=4, ge=1)
    container: str = "atom"
    image: str = ""
    # Where ATOM lives inside the container (the tree that was patched).
    atom_path: str = ""
    baseline: str = "reports/baseline.json"
    nodes: list[Node] = Field(default_factory=list)
    ssh: Ssh = Field(default_factory=Ssh)
    server: Server = Field(default_factory=Server)
    launch: Launch = Field(default_factory=Launch)
    bench: Bench = Field(default_factory=Bench)
    platform: PlatformExpect = Field(default_factory=PlatformExpect)
    fabric: FabricExpect = Field(default_factory=FabricExpect)
    serving: ServingExpect = Field(default_factory=ServingExpect)
    accuracy: AccuracyExpect = Field(default_factory=AccuracyExpect)
    # `pytest -m regression`: per-fact tolerances against the recorded baseline.
    regression: RegressionExpect = Field(default_factory=RegressionExpect)
    # `rackgate fleet --remediate`: the operator's remedies and the Slurm names of the nodes.
    remediate: Remediate = Field(default_factory=Remediate)
    # Present only for the simulated rack: the nodes are then built by rackgate.sim.
    sim: Sim | None = None

    @model_validator(mode="after")
    def _nodes(self) -> Rack:
        if self.sim is None and not self.nodes:
            raise ValueError("no [[nodes]]: a real rack lists its nodes (or add a [sim] table)")
        names = [n.name for n in self.nodes]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"duplicate node name(s): {', '.join(sorted(dup))}")
        if self.launch.head and self.nodes and self.launch.head not in names:
            raise ValueError(f"launch.head {self.launch.head!r} is not a node ({', '.join(names)})")
        return self

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    @property
    def head(self) -> Node:
        return self.node(self.launch.head) if self.launch.head else self.nodes[0]

    @property
    def gpu_count(self) -> int:
        return len(self.nodes) * self.gpus_per_node
