"""A tier run on the sim: its rows only; a budget that cannot be met leaves every item it could not
start as could-not-observe naming the tier, and the run is not a PASS (exit 3, verdict UNKNOWN with
the tier's own entry); within its budget the same selection passes."""
import subprocess
import sys
from datetime import timedelta

import pytest

from rackgate import registry
from rackgate.catalogue import tiers
from rackgate.ids import check_of
from rackgate.registry import checks
from rackgate.report import validity

from ..harness import run_suite, selected, user_env

pytestmark = pytest.mark.suite


def test_quick_selects_its_rows_only(tmp_path):
    ids = selected(tmp_path, "--tier", "quick")
    quick = tiers()["quick"]
    got = {check_of(i) for i in ids}
    assert got == {rid for rid in checks() if quick.selects(rid)}
    assert registry.item_id(checks()["PLAT-DRIVER"], "node1") in ids


def test_a_budget_it_cannot_meet_leaves_items_named_and_the_run_is_not_a_pass(tmp_path):
    run = run_suite(tmp_path, "--tier", "quick", "--tier-budget", "0", "-m", "platform")
    assert run.verdict is not None, run.verdict_problem
    assert run.verdict["verdict"] == "UNKNOWN" and run.verdict["counts"]["pass"] == 0
    tier_entry = [u for u in run.verdict["rack_unknown"] if u["test"] == "(tier quick)"]
    assert tier_entry and "did not finish in its budget of 0 s" in tier_entry[0]["why"]
    left = [i for i in run.verdict["items"] if i["test"] != "(tier quick)"]
    assert left and all(i["outcome"] == "UNKNOWN" and "tier quick: its budget of 0 s was spent" in i["seen"] for i in left)
    assert registry.item_id(checks()["PLAT-DRIVER"], "node2") in run.stdout and "left: " in run.stdout
    assert run.rc != 0


def test_a_budget_spent_mid_run_cuts_the_running_item_leaves_the_rest_and_the_run_is_not_a_pass(tmp_path):
    """Whatever ran within 3 s passed or was cut at the budget by its capped timer; everything after
    it was left; never a PASS (the split depends on the machine's speed, the verdict does not)."""
    run = run_suite(tmp_path, "--tier", "quick", "--tier-budget", "3", "-m", "platform")
    assert run.verdict is not None and run.verdict["verdict"] == "UNKNOWN" and run.rc != 0, run.stdout[-2000:]
    items = [i for i in run.verdict["items"] if i["test"] != "(tier quick)"]
    not_run = [i for i in items if "tier quick: its budget of 3 s was spent" in i["seen"]]
    cut = [i for i in items if "tier quick: its budget of 3 s ran out while this item ran" in i["seen"]]
    assert not_run and all(i["outcome"] == "UNKNOWN" for i in not_run + cut)
    assert len(not_run) + len(cut) + sum(i["outcome"] == "PASS" for i in items) == len(items)
    assert all(f"cut at the budget: {i['test']}" in run.stdout for i in cut)


def test_within_its_budget_the_same_tier_passes_and_its_items_carry_their_validity(tmp_path):
    """Every item stamped with its row's validity and the image digest the sim's containers ran;
    `rackgate status` reads the file green now and expired past the longest validity (an image-bound row: IMAGE_CAP)."""
    run = run_suite(tmp_path, "--tier", "quick", "-m", "platform")
    assert run.verdict is not None and run.verdict["verdict"] == "PASS", run.stdout[-2000:]
    assert "rackgate: tier quick: finished in" in run.stdout and run.rc == 0
    for i in run.verdict["items"]:
        at, until = validity.when(i["judged_at"]), validity.when(i["valid_until"])
        assert i["row"] and at is not None and until is not None and until - at == validity.of(i["row"]).span, i
        assert i["image"].startswith("sha256:"), i
    status = [sys.executable, "-m", "rackgate.cli", "status", str(tmp_path / "verdict.json")]
    now = subprocess.run(status, env=user_env(), capture_output=True, text=True, timeout=120)
    assert now.returncode == 0 and "GREEN" in now.stdout, now.stdout + now.stderr
    later = validity.stamp(validity.when(run.verdict["items"][0]["judged_at"]) + validity.IMAGE_CAP + timedelta(minutes=1))
    expired = subprocess.run([*status, "--now", later], env=user_env(), capture_output=True, text=True, timeout=120)
    assert expired.returncode == 3 and "EXPIRED" in expired.stdout and " 0 green" in expired.stdout, expired.stdout


def test_an_unknown_tier_is_one_line_and_exit_2(tmp_path):
    p = subprocess.run([sys.executable, "-m", "rackgate.cli", "--tier", "quik", f"--verdict-file={tmp_path / 'v.json'}"],
                       cwd=tmp_path, env=user_env(), capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "--tier 'quik': no such tier; tiers: quick, standard, full" in p.stderr + p.stdout
    assert "Traceback" not in p.stderr + p.stdout
