"""`rackgate survey`: which trays of a rack can be used right now, and the best N-tray set.

Every tray is surveyed in parallel and read-only through the suite's own transport, probes and
judges (PLAT-FREE, PLAT-TUNED, PLAT-PARAMS, FAB-STATE, FAB-ACCEL-ID, the PPOD/VPOD domain). A tray
that could not be observed is shown as such and excluded for that reason; it is never given a
fault it was not seen to have.

    model.py    a tray's cells (pass / fail / could not observe) and its report
    tray.py     one tray's survey (calls the probes and the gates' judges, as the pytest items do)
    run.py      the whole rack, fanned out with bounded concurrency
    pick.py     exclusions, fabric domains, ranked N-tray sets
    table.py    the terminal table
    rackfile.py a rack file for the chosen set
    cli.py      `rackgate survey`
"""
