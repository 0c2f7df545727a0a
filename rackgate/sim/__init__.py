"""The simulated rack: a test double of a 4-node gfx1250 rack on this machine.

Nodes are reached through the same transport as a real rack (local runner + a sysroot + a
PATH holding executables with the real names and output formats). A probe never knows it is
talking to the sim. Faults are chosen by name; see rackgate.sim.faults.
"""
