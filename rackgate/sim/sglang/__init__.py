"""Stand-ins for SGLang's client tools on the simulated rack (`-m rackgate.sim.sglang.bench_serving`
in place of `-m sglang.bench_serving`)."""
