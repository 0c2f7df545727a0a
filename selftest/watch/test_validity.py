"""Results that expire: each row's validity (catalogue data, defaults by family), the stamps an item
gets, and the one rule every reader applies (expired, due), with `rackgate status`'s per-GPU map."""
from datetime import datetime, timedelta, timezone

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackgate.catalogue import FAMILY_VALIDITY, rows
from rackgate.report import status, validity
from rackgate.report import verdict_file as vf

pytestmark = pytest.mark.unit

T0 = datetime(2026, 12, 7, 12, 0, 0, tzinfo=timezone.utc)
NODES = [("node1", 1, "h1"), ("node2", 2, "h2")]
DIGEST_A, DIGEST_B = "sha256:" + "a" * 64, "sha256:" + "b" * 64


def test_every_row_has_a_validity_error_counters_minutes_links_an_hour_rounds_a_day_accuracy_the_image():
    got = {r.id: validity.of(r.id) for r in rows().values()}
    assert all(v.span > timedelta(0) for v in got.values())
    for rid in ("PLAT-RAS", "FAB-ERRORS", "SRV-HW-ERRORS"):
        assert got[rid].span <= timedelta(minutes=30) and not got[rid].image
    assert got["FAB-STATE"].span == timedelta(hours=1)
    assert got["FAB-P2P"].span == got["FAB-BW"].span == got["FAB-COLLECTIVE"].span == timedelta(days=1)
    assert got["ACC-GSM8K"].image and got["SRV-GOLDEN"].image and got["ACC-QUICK"].image
    assert set(FAMILY_VALIDITY) == {r.family for r in rows().values()}


@pytest.mark.parametrize("bad", ["", "0m", "1w", "10 m", "-1h", "images", "1.5h"])
def test_a_validity_that_is_not_one_is_refused_in_one_line(bad):
    with pytest.raises(ValueError, match="validity"):
        validity.parse(bad)


def _item(row, outcome="PASS", judged=T0, image=DIGEST_A, test=None):
    at, until = validity.stamps(row, judged)
    return {"test": test or f"t::test_{row.lower()}[node1]", "outcome": outcome, "row": row, "where": "", "seen": "x",
            "judged_at": at, "valid_until": until, "image": image}


def test_a_pass_expires_at_valid_until_and_not_a_second_before():
    it = _item("FAB-STATE")
    assert it["valid_until"] == "2026-12-07T13:00:00Z"
    assert validity.state(it, T0 + timedelta(minutes=59, seconds=59)) == validity.GREEN
    assert validity.state(it, T0 + timedelta(hours=1)) == validity.EXPIRED


def test_an_image_bound_row_expires_when_the_image_changes_and_only_then():
    it = _item("ACC-GSM8K")
    later = T0 + timedelta(days=3)
    assert validity.state(it, later, DIGEST_A) == validity.GREEN
    assert validity.state(it, later, DIGEST_B) == validity.EXPIRED
    assert validity.state(it, later, "") == validity.GREEN          # the image unknown now: not a change
    assert validity.state(it, later, "rocm/atom:tag") == validity.GREEN   # a tag is not comparable to a digest
    assert validity.state(_item("FAB-STATE"), T0, DIGEST_B) == validity.GREEN   # a timed row ignores the image
    assert validity.state(it, T0 + validity.IMAGE_CAP, DIGEST_A) == validity.EXPIRED


def test_a_finding_never_expires_into_green_and_an_unstamped_item_is_expired():
    assert validity.state(_item("FAB-STATE", "FAIL"), T0 + timedelta(days=9)) == validity.FAILED
    assert validity.state(_item("FAB-STATE", "UNKNOWN"), T0) == validity.UNOBSERVED
    old = {"test": "t::x", "outcome": "PASS", "row": "", "where": "", "seen": ""}
    assert validity.state(old, T0) == validity.EXPIRED


def test_due_is_failed_unobserved_and_expired_and_max_age_caps_everything():
    items = [_item("PLAT-RAS", test="a"), _item("FAB-STATE", test="b"), _item("FAB-STATE", "FAIL", test="c"),
             _item("FAB-P2P", "UNKNOWN", test="d"), _item("FAB-P2P", test="e")]
    assert validity.due(items, T0 + timedelta(minutes=1)) == ["c", "d"]
    assert validity.due(items, T0 + timedelta(minutes=30)) == ["a", "c", "d"]
    assert validity.due(items, T0 + timedelta(hours=2)) == ["a", "b", "c", "d"]
    assert validity.due(items, T0 + timedelta(minutes=1), max_age=timedelta(0)) == ["a", "b", "c", "d", "e"]


# fixed examples, no deadline: the shared machine's load must not fail a property (selftest/properties/mutate.py)
@settings(derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(sorted(rows())), st.integers(0, 40 * 86400))
def test_stamps_are_valid_rfc3339_and_in_order_for_every_row(row_id, offset):
    at, until = validity.stamps(row_id, T0 + timedelta(seconds=offset))
    a, u = validity.when(at), validity.when(until)
    assert a is not None and u is not None and a < u and u - a == validity.of(row_id).span


def test_verdict_items_carry_the_stamps_on_the_schema_and_a_rerun_keeps_the_older_stamps():
    schema = __import__("json").loads(vf.SCHEMA.read_text())
    old = vf.build("r", NODES, 4, [vf.Item("t::test_fab_state[node1-card1]", vf.PASS, "FAB-STATE", *[""] * 2,
                                           *validity.stamps("FAB-STATE", T0), DIGEST_A),
                                   vf.Item("t::test_plat_ras[node2]", vf.PASS, "PLAT-RAS", "", "",
                                           *validity.stamps("PLAT-RAS", T0), DIGEST_A)])
    jsonschema.validate(old, schema)
    later = T0 + timedelta(minutes=20)
    new = vf.build("r", NODES, 4, [vf.Item("t::test_plat_ras[node2]", vf.PASS, "PLAT-RAS", "", "",
                                           *validity.stamps("PLAT-RAS", later), DIGEST_A)])
    merged = vf.rebuild(old, new)
    jsonschema.validate(merged, schema)
    by = {i["test"]: i for i in merged["items"]}
    assert by["t::test_fab_state[node1-card1]"]["judged_at"] == "2026-12-07T12:00:00Z"
    assert by["t::test_plat_ras[node2]"]["judged_at"] == "2026-12-07T12:20:00Z"
    assert validity.due(merged["items"], later + timedelta(minutes=1)) == []


def test_status_marks_the_failed_gpu_the_expired_node_and_the_rack_wide_items():
    items = [vf.Item(f"t::test_fab_state[{n}-card{g}]", vf.PASS, "FAB-STATE", "", "", *validity.stamps("FAB-STATE", T0))
             for n in ("node1", "node2") for g in range(4) if (n, g) != ("node2", 1)]
    items += [vf.Item("t::test_fab_state[node2-card1]", vf.FAIL, "FAB-STATE", "node2/card1", "accel_state=unconfigured",
                      *validity.stamps("FAB-STATE", T0)),
              vf.Item("t::test_plat_ras[node1]", vf.PASS, "PLAT-RAS", "", "", *validity.stamps("PLAT-RAS", T0)),
              vf.Item("t::test_srv_alive[node1-dp2]", vf.UNKNOWN, "SRV-ALIVE", "", "could not observe: timeout",
                      *validity.stamps("SRV-ALIVE", T0)),
              vf.Item("t::test_srv_sanity", vf.PASS, "SRV-SANITY", "", "", *validity.stamps("SRV-SANITY", T0))]
    text, worst = status.render(vf.build("r", NODES, 4, items), T0 + timedelta(minutes=15))
    lines = {ln.split()[0]: ln for ln in text.splitlines()[2:5]}
    assert worst == validity.FAILED
    assert "~ ~ ~ ~" in lines["node1"] and "unobserved" in lines["node1"] and "test_srv_alive[node1-dp2]" in lines["node1"]
    assert "# X # #" in lines["node2"] and "accel_state=unconfigured" in lines["node2"]
    assert "green (1)" in lines["rack-wide"]
    assert "1 failed, 1 unobserved, 1 expired" in text.splitlines()[0]


def test_places_of_item_ids():
    names = {"node1", "node2", "node10"}
    assert status.place_of("t::x[node2-card3]", names, 4) == status.Place("node2", 3, None, (3,), ("node2",))
    assert status.place_of("t::x[node10-dp37]", names, 4) == status.Place("node10", None, 37, (), ("node10",))
    assert status.place_of("t::x[node1-node10]", names, 4).nodes == ("node1", "node10")
    assert status.place_of("t::x", names, 4) == status.Place()


def test_the_current_image_is_the_newest_digest_a_run_read_over_a_later_runs_tag():
    items = [_item("ACC-GSM8K", judged=T0, image=DIGEST_A), _item("PLAT-CONTAINER", judged=T0 + timedelta(hours=1), image=DIGEST_B),
             _item("FAB-STATE", judged=T0 + timedelta(hours=2), image="rocm/atom:tag")]
    assert validity.current_image(items) == DIGEST_B
    assert validity.due(items, T0 + timedelta(hours=2, minutes=1), validity.current_image(items)) == ["t::test_acc-gsm8k[node1]",
                                                                                                  "t::test_plat-container[node1]"]
    assert validity.current_image(items[2:]) == "rocm/atom:tag" and validity.current_image([]) == ""


def test_a_flapping_item_is_named_from_the_history_and_a_steady_one_is_not():
    hist = [{"cycle": c, "test": "t::test_fab_state[node2-card1]", "outcome": o} for c, o in enumerate("PASS FAIL PASS".split())]
    hist += [{"cycle": c, "test": "t::test_plat_ras[node1]", "outcome": "PASS"} for c in range(5)]
    hist += [{"cycle": c, "test": "t::test_srv_alive[node1-dp2]", "outcome": o} for c, o in enumerate("PASS PASS FAIL FAIL".split())]
    hist += [{"cycle": 9, "started": "x", "ran": 3}]
    assert status.flapping(hist) == ["test_fab_state[node2-card1]: PASS FAIL PASS"]
    old = [{"test": "t::x", "outcome": o} for o in "PASS FAIL PASS".split()] + [{"test": "t::x", "outcome": "PASS"}] * 10
    assert status.flapping(old) == []
