"""The simulated ATOM server, by concern (rackgate/sim/atom_server.py is its entry point):

    log.py        every line the sim server prints, in ATOM's formats (docs/formats.md)
    behaviour.py  what the server's faults make ranks and routes do, as typed data
    ranks.py      one DP rank: boot, KV budget, serving forward passes over loopback
    routes.py     the OpenAI HTTP API on the head node, and routing requests to ranks
    main.py       the command line, Engine kwargs, forking the node's ranks
"""
