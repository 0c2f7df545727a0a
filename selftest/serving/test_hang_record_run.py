"""The hang record in a real run, under xdist (issue 35): SRV-SANITY's requests hang on the
attached sim's hung rank, which is SRV-DEADLOCK's FAILED; a later check that uses the server and
does not need SRV-SANITY (so the catalogue's `needs` says nothing) is not run, pointing at
SRV-DEADLOCK -- read from the ordering's record on the worker that holds the server's group, never
from the server object (settle writes nothing into it). The unit tests: test_hang_record.py."""
import pytest

from ..harness import run_suite
from ..simserver import sim_server

pytestmark = pytest.mark.suite

SANITY = "SRV-SANITY::server"

# a user's own check after SANITY (order 99, no `needs`) that uses the server
LATER = '''
import pytest


@pytest.mark.row("SRV-HW-ERRORS")
def test_after_the_hang(server):
    pass
'''


def test_a_hang_stops_a_later_server_check_through_the_ordering_under_xdist(tmp_path):
    later = tmp_path / "checks" / "test_later.py"
    later.parent.mkdir()
    later.write_text(LATER)
    with sim_server("rank-hung") as (_proc, url):
        run = run_suite(tmp_path, SANITY, str(later), "--atom-url", url, "--served-model", "moonshotai/Kimi-K3",
                        "-n", "2", "--dist", "loadgroup", timeout=600)
    assert run.outcomes[SANITY].status == "failed", run.stdout[-3000:]
    assert run.outcomes[SANITY].message.startswith("SRV-DEADLOCK ["), run.outcomes[SANITY].message
    (tid,) = [t for t in run.outcomes if t.endswith("test_after_the_hang")]
    o = run.outcomes[tid]
    assert o.status == "error" and "not run: SRV-DEADLOCK failed: requests hang at " in o.message, (o.status, o.message)
