"""The simulated ATOM server's healthy behaviour (faults in rackgate/sim/faults/srv.py change it).

state["server"] (typed as rackgate/sim/state.py ServerState; rank_faults as engine/behaviour.py ServerFaults):
  api          "image": the runbook image's HTTP behaviour (wrong model -> 404, OpenAI finish
               reasons on completions); "main": current ATOM main (400 with a detail message,
               the engine's own finish reasons such as "max_tokens" on /v1/completions)
  silicon      what the sim's GPUs are ("B0": translation not needed)
  store_entries  translation-store entries of the rocjitsu prefix the hook finds (1976 good)
  rank_faults  {fault name: {args}} for faults that hit one rank or one node
  step_s       seconds per boot phase (the real boot is 6-25 minutes)
"""


def healthy(state, gpus: int) -> None:
    state.server.set(api="image", silicon="B0", store_entries=1976, rank_faults={}, step_s=0.08)
