"""The output-length distributions' picture (matplotlib in a subprocess; the facts alone:
test_output_lengths.py)."""
import pytest

from rackgate.report import plots

pytestmark = pytest.mark.suite


def test_distributions_picture():
    png = plots.distributions("t", {"baseline": [100, 120, 140], "this run": [50, 60, 70]}, "tokens")
    assert png.startswith(b"\x89PNG")
    with pytest.raises(plots.PlotError):
        plots.distributions("t", {"baseline": [1], "this run": []})
