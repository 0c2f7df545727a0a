"""Per-area extensions of the sim's state and node roots (one module per area: plat, fab, srv,
acc). A module may define:

    def healthy(state: Rack, gpus: int) -> None   # add the area's healthy facts to a new state
    def render(rack_dir, name: str, node: Node) -> None   # write the area's files for one node

(Rack, Node: rackgate/sim/state.py; an area's own facts are typed fields there.)

so that areas grow without editing shared code.
"""
