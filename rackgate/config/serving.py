"""The ATOM server: how it is launched, and what the SRV rows expect of it."""
from pydantic import Field

from .base import Section


class Launch(Section):
    # The same command runs on every node inside the container. Placeholders filled per node:
    # {node} {node_index} {dp_start} {dp_local} {dp_size} {head_ip} {data_ip} {port}.
    command: str = ""
    env: dict[str, str] = Field(default_factory=dict)
    # Node that hosts the HTTP API (the first node when empty).
    head: str = ""
    port: int = Field(default=8000, ge=1, le=65535)
    # Where each node's log lands (on that node); {node} is filled in.
    log_path: str = "/tmp/rackgate/atom-{node}.log"
    # A real rack cold-starts in up to 25 minutes; the sim in seconds.
    boot_budget_s: float = Field(default=1500.0, gt=0)
    stall_limit_s: float = Field(default=600.0, gt=0)
    stop_grace_s: float = Field(default=30.0, gt=0)


class ServingExpect(Section):
    # Per-request HTTP timeout of the suite's client.
    request_timeout_s: float = Field(default=120.0, gt=0)
    # SRV-SANITY prompts and their expected continuations (case-insensitive substring).
    sanity_prompts: dict[str, str] = Field(default_factory=lambda: {
        "The capital of France is": "paris",
        "1, 2, 3, 4, 5,": "6",
    })
    sanity_max_tokens: int = Field(default=16, gt=0)
    # Near-uniform logprobs: the mean top-1 probability below this means noise, not a model.
    min_top1_prob: float = Field(default=0.05, gt=0, lt=1)
