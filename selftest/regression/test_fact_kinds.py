"""Every kind of fact an image can move has a named tolerance of the right kind (issue 15):
configuration must be equal, measured figures a relative band, noisy figures a band widened by
the baseline's spread; the image itself is reported, never judged."""
import pytest

from rackgate.config.regression import RegressionExpect

pytestmark = pytest.mark.unit

EQUAL = ["platform.gpu.count", "platform.gpu.hbm_gib", "platform.patch.size_bytes", "platform.atom.commit",
         "ualink.accel_id", "ualink.local_accels", "ualink.station_lane_en_bitmap", "serving.engine.kwarg",
         "serving.translation.installed", "serving.translation.translated", "serving.translation.reused"]
MEASURED = ["serving.kv.available_gb", "serving.kv.blocks", "accuracy.gsm8k.full", "accuracy.gsm8k.quick"]
NOISY = {"bench.tok_s_per_gpu": "higher", "bench.ttft_ms": "lower", "bench.tpot_ms": "lower",
         "serving.cold_start_s": "lower", "fabric.ubench07.read_gbps": "higher",
         "fabric.ubench07.write_gbps": "higher", "fabric.ubench07.bidir_gbps": "higher",
         "fabric.collective.busbw_gbps": "higher"}


@pytest.mark.parametrize("name", EQUAL)
def test_configuration_must_be_equal(name):
    named, tol = RegressionExpect().for_fact(name)
    assert named == name and tol.direction == "equal"


@pytest.mark.parametrize("name", MEASURED)
def test_measured_figures_have_a_band(name):
    named, tol = RegressionExpect().for_fact(name)
    assert named == name and tol.direction == "higher" and (tol.rel or tol.abs)


@pytest.mark.parametrize("name, direction", sorted(NOISY.items()))
def test_noisy_figures_widen_with_the_baselines_spread(name, direction):
    named, tol = RegressionExpect().for_fact(name)
    assert named == name and tol.direction == direction and tol.rel and tol.noise
    assert tol.allowance(100.0, 20.0) == pytest.approx(tol.noise * 20.0)
    assert tol.allowance(100.0, 20.0) > tol.allowance(100.0, None)


@pytest.mark.parametrize("name", ["platform.image.tag", "platform.image.id"])
def test_the_image_is_reported(name):
    assert RegressionExpect().for_fact(name)[1].direction == "report"
