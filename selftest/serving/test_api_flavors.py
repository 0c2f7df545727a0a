"""ATOM's HTTP behaviour in both versions the suite meets: a wrong model name is a 404 on the
runbook's image and a 400 with a detail message on current main (validate_model); /v1/completions
reports OpenAI's finish reasons on the image and the engine's own (max_tokens, eos) on main."""
import pytest

from rackgate.atom import finish
from rackgate.atom.client import Client, ServerError, first_choice, refusal

from ..simserver import sim_server

pytestmark = pytest.mark.suite

MODEL = "moonshotai/Kimi-K3"


@pytest.mark.parametrize("flavor,faults,status,says", [
    ("image", (), 404, "Not Found"),
    ("main", ("api-main",), 400, "Requested model '/models/Kimi-K3' does not match server model 'moonshotai/Kimi-K3'"),
])
def test_wrong_model_and_finish_reasons(flavor, faults, status, says):
    with sim_server(*faults) as (_, url):
        wrong = Client(url, "/models/Kimi-K3", timeout=20)
        reply = wrong.completion("The capital of France is")
        assert reply.status == status and refusal(reply) == f"HTTP {status}: {says}"
        with pytest.raises(ServerError) as e:
            first_choice(reply, "/v1/completions")
        assert says in str(e.value)
        right = Client(url, MODEL, timeout=20)
        cut = first_choice(right.completion("The capital of France is", max_tokens=3), "/v1/completions")
        done = first_choice(right.completion("The capital of France is", max_tokens=64), "/v1/completions")
        raw = (cut["finish_reason"], done["finish_reason"])
        assert raw == (("length", "stop") if flavor == "image" else ("max_tokens", "eos"))
        assert [finish.normalize(r) for r in raw] == ["length", "stop"]
        chat = first_choice(right.chat([{"role": "user", "content": "hi"}], max_tokens=8), "/v1/chat/completions")
        assert chat["finish_reason"] == "length"  # chat normalizes on both versions
