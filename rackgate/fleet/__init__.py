"""`rackgate fleet`: one suite run per rack (local processes or one Slurm job array), gathered
into one Allure report and one fleet.json; re-run what failed; drain trays with findings.

plan.py (what each rack's run is), local.py and slurm.py (the schedulers), gather.py (results ->
fleet.json + merged report), drain.py (scontrol lines), cli.py (the command). docs/fleet.md.
"""
