"""PLAT-PREFIX (A0 only, or when a prefix is configured): the rocjitsu B0->A0 translation prefix is
the required one, and the launch environment actually loads it."""
import pytest

from rackgate.gates import plat as judge
from rackgate.probes import container, docker
from rackgate.report.verdict import CouldNotObserve, check


@pytest.mark.row("PLAT-PREFIX")
def test_translation_prefix(node, rack, evidence):
    cfg = rack.platform.prefix
    if rack.silicon != "A0" and not cfg.path:
        pytest.skip("B0 silicon and no platform.prefix.path: the translation layer is inert on B0 (runbook Appendix B)")
    root = cfg.root()
    ch = node.container()
    hook, translator = f"{root}/{cfg.hook}", f"{root}/{cfg.translator}"
    sizes, raw = container.sizes(ch, [hook, translator])
    store = container.count_entries(ch, f"{root}/{cfg.store}")
    if rack.container:
        info, _ = docker.inspect(node.host, rack.container)
        if info is None:
            raise CouldNotObserve(f"{node.name}: no container {rack.container} to read the environment of")
        base = info.env_dict()
    else:  # container = "": the engine starts from the node's own environment
        base = container.environment(ch)
    env = judge.effective_env(base, rack.launch.env)
    keys = ("HSA_TOOLS_LIB", "LD_LIBRARY_PATH", "HOTSWAP")
    evidence.attach("prefix", raw + f"{root}/{cfg.store}: {store} entries\n"
                    + "\n".join(f"{k}={env.get(k, '(unset)')}" for k in keys))
    bad = judge.prefix(root, cfg, sizes, store, env)
    check(not bad, "PLAT-PREFIX", node.name, "; ".join(bad))
