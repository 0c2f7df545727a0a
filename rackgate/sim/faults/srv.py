"""SRV faults: the ATOM server's behaviour."""
from . import fault


def _server(state, name: str) -> None:
    state["server"]["faults"].append(name)


@fault("served-path", "SRV-MODELS", "launched without --served-model-name: /v1/models lists the model path")
def _served_path(state):
    _server(state, "served-path")


@fault("bang-tokens", "SRV-SANITY", "every generated token is '!' (A0 without B0->A0 translation)")
def _bang(state):
    _server(state, "bang-tokens")
