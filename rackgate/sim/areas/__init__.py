"""Per-area extensions of the sim's state and node roots (one module per area: plat, fab, srv,
acc). A module may define:

    def healthy(state: dict, gpus: int) -> None   # add the area's healthy facts to a new state
    def render(rack_dir, name: str, node: dict) -> None   # write the area's files for one node

so that areas grow without editing shared code.
"""
