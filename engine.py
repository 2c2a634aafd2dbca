"""engine.py: the policy engine behind rl.py: a model loaded (tiny, a hub id, a local folder or a GGUF), LoRA adapters,
bf16 autocast with packed attention and recomputed layers, G completions sampled per prompt (transformers' generate or
a CUDA-graphed loop), the log-probs the loss scores, the optimizer step (gradients summed over torchrun's ranks,
clipped, the warmup's lr) and torchrun's other data-parallel helpers.

It knows nothing of stages, rewards or the evaluator: rl.py decides what to sample and what to learn. `cfg` is
rl.Config; the fields read here are device, model, seed, lora_*, init_from, out, resume, beta, group_size,
max_new_tokens, temperature, top_p, gen_cache, recompute, lr, warmup_steps and max_grad_norm.
"""
import inspect
import math
import os
import sys
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from functools import partial
from pathlib import Path

import torch
import torch.distributed as dist
from torch.utils.checkpoint import checkpoint

# ---------------------------------------------------------------------------- loading: tiny, a hub id, a local folder, a GGUF


def hub_reachable(timeout=3.0):
    """Can this machine open a connection to the Hugging Face hub?"""
    import socket
    from urllib.parse import urlparse
    from huggingface_hub import constants
    if constants.HF_HUB_OFFLINE:
        return False
    try:
        socket.create_connection((urlparse(constants.ENDPOINT).hostname, 443), timeout).close()
        return True
    except OSError:
        return False


def hub_cached(model_id):
    """Is a copy of model_id in the local hub cache (usable offline)?"""
    from huggingface_hub import try_to_load_from_cache
    return isinstance(try_to_load_from_cache(model_id, "config.json"), str)


class PolicyError(RuntimeError):
    """A model that cannot be loaded."""


def tiny_policy(seed):
    """A random ~330K-parameter Llama and a byte-level tokenizer, built offline (for tests and the CPU fallback)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}  # one token per byte
    raw = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    raw.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<|endoftext|>", pad_token="<|pad|>")
    config = LlamaConfig(vocab_size=len(tok), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32768,
                         tie_word_embeddings=True, bos_token_id=None, eos_token_id=tok.eos_token_id,
                         pad_token_id=tok.pad_token_id)
    torch.manual_seed(seed)
    return LlamaForCausalLM(config), tok


def load_policy(cfg):
    """(model, tokenizer) for --model: 'tiny', a .gguf file, a local folder or a hub id; PolicyError if it won't load.

    Weights are fp32 (bf16 compute comes from autocast on CUDA); the tokenizer pads on the left for generation.
    """
    if cfg.model == "tiny":
        model, tok = tiny_policy(cfg.seed)
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer  # lazy: evaluator workers re-import rl.py
        path = Path(cfg.model).expanduser()
        gguf = dict(gguf_file=path.name) if path.suffix == ".gguf" else {}
        where = str(path.parent) if gguf else str(path)
        try:
            if (gguf or cfg.model.startswith((".", "/", "~"))) and not path.exists():
                raise OSError(f"{path} does not exist")  # a path, not a hub id: don't ask the hub
            if not path.exists() and not hub_cached(cfg.model) and not hub_reachable():  # (the hub client retries
                raise OSError(f"no network to the model hub and no cached copy of {cfg.model}")  # for ~50 s)
            tok = AutoTokenizer.from_pretrained(where, **gguf)
            model = AutoModelForCausalLM.from_pretrained(where, dtype=torch.float32, **gguf)
        except (OSError, ValueError, ImportError) as e:
            why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise PolicyError(f"cannot load model {cfg.model!r}: {why}\n  Offline or no such model? Use --model "
                              "tiny (random, offline) or --model PATH (a local folder or a .gguf file).") from None
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    use_packed_attention(model)
    return model.to(cfg.device).eval(), tok


def needs_init_from(cfg):
    """Does this run read --init-from's weights? Not once it has a checkpoint of its own to resume: that holds
    them (and their moments) as trained since, so the earlier stage's ckpt.pt may be gone by then."""
    return bool(cfg.init_from) and not (cfg.resume and (Path(cfg.out) / "ckpt.pt").is_file())


def initial_policy(cfg):
    """The policy before this run's first step: --model (with LoRA adapters at --lora-rank), with the weights of
    --init-from's checkpoint when given (all of them, or its adapters)."""
    model, tok = load_policy(cfg)
    if cfg.lora_rank:
        add_lora(model, cfg.lora_rank, cfg.lora_alpha, cfg.seed, cfg.lora_targets,
                 base_dtype=torch.bfloat16 if cfg.device == "cuda" else torch.float32)
    if needs_init_from(cfg):  # (a resume's restore() loads its own checkpoint over these weights)
        state = torch.load(Path(cfg.init_from) / "ckpt.pt", map_location=cfg.device, weights_only=False)  # ours
        load_weights(model, state["model"], Path(cfg.init_from) / "ckpt.pt")
    return model, tok

# ---------------------------------------------------------------------------- LoRA


# LoRA (Hu et al. 2021) on the attention and MLP projections (--lora-targets, by their names in Llama and Qwen2;
# attention alone, q_proj,k_proj,v_proj,o_proj, is a quarter of the adapters): each adapted nn.Linear W keeps its
# weights, frozen, and gains lora_a (r, in) and lora_b (out, r), trained in fp32: y = W x + (alpha / r) B A x. B starts
# at zero, so a fresh adapter changes nothing. A forward hook adds the term, so the weights keep their names (a full
# state still loads) and a checkpoint holds only the adapters and their AdamW moments (rank 16 on every projection of
# Qwen2.5-Coder-0.5B: 8.8M parameters, a 106 MB ckpt.pt). With adapters off, the model is its base (not the KL
# anchor: kl_anchor).
def lora_term(linear, args, out):
    if not linear.lora_on:
        return out
    x = args[0]
    if x.dtype != linear.lora_a.dtype and not torch.is_autocast_enabled(x.device.type):
        x = x.to(linear.lora_a.dtype)  # (under autocast the matmuls take bf16 as they are: no cast kernels)
    return out + (((x @ linear.lora_a.T) * linear.lora_scale) @ linear.lora_b.T).to(out.dtype)


def add_lora(model, rank, alpha, seed, targets, base_dtype=torch.float32):
    """Freeze the model (its weights cast to base_dtype; buffers stay as they are: RoPE's inv_freq in bf16 would be
    0.4% off, radians off at position 4,000) and give every projection named in targets (comma-separated) an
    adapter; A is drawn like nn.Linear's weights from a generator seeded with `seed` (the global RNG is left alone)."""
    targets = targets.split(",")
    for p in model.requires_grad_(False).parameters():  # (tied weights are one parameter: they stay tied)
        p.data = p.data.to(base_dtype)
    g = torch.Generator().manual_seed(seed)
    adapted = [m for name, m in model.named_modules()
               if isinstance(m, torch.nn.Linear) and name.rsplit(".", 1)[-1] in targets]
    if not adapted:
        raise PolicyError(f"no projection named {'/'.join(targets)} in this model: LoRA has nothing to adapt")
    for m in adapted:
        bound = 1 / m.in_features ** 0.5  # nn.Linear's init: kaiming_uniform with a = sqrt(5)
        a = torch.empty(rank, m.in_features).uniform_(-bound, bound, generator=g)
        m.lora_a = torch.nn.Parameter(a.to(m.weight.device))
        m.lora_b = torch.nn.Parameter(torch.zeros(m.out_features, rank, device=m.weight.device))
        m.lora_scale, m.lora_on = alpha / rank, True
        m.register_forward_hook(lora_term)
    return model


def trainable(model):
    """The parameters AdamW steps: all of them, or with LoRA the adapters."""
    return [p for p in model.parameters() if p.requires_grad]


def saved_weights(model):
    """What a checkpoint keeps of the policy: every weight, or with LoRA its adapters (the base is --model's)."""
    state = model.state_dict()
    return {k: v for k, v in state.items() if ".lora_" in k} if any(".lora_" in k for k in state) else state


def load_weights(model, state, where):
    """saved_weights' state into the model: a full state (any adapters keep their start) or adapters alone (then
    the model must have those adapters). PolicyError when they do not fit."""
    missing, unexpected = model.load_state_dict(state, strict=False)
    adapters_only = all(".lora_" in k for k in state)
    if unexpected or any((".lora_" in k) == adapters_only for k in missing):  # the part the state holds is missing
        what = "LoRA adapters" if adapters_only else "full weights"
        raise PolicyError(f"{where} holds {what} that do not fit this policy ({len(unexpected)} unexpected, "
                          f"{len(missing)} missing keys): use its --model and --lora-rank")


def kl_anchor(cfg, model, start):
    """The KL term's reference (beta > 0): the policy this stage started from, frozen; None when beta = 0. It is kept
    in OUT/anchor.pt at the stage's first step, so that a resume anchors to the same start whatever became of
    --init-from; a resumed step without that file is a PolicyError (the start cannot be rebuilt from the policy of
    now). With LoRA the adapters at the start ({name: tensor}; the base with adapters off is the pre-sft model,
    which writes no working code); with full weights a second model with those weights."""
    if cfg.beta == 0:
        return None
    path = Path(cfg.out) / "anchor.pt"
    if start > 1 and not path.is_file():
        raise PolicyError(f"{path} is missing: the KL anchor (the policy at this stage's first step) cannot be "
                          f"rebuilt at step {start}; restore it, or resume with --beta 0")
    if start > 1:
        weights = torch.load(path, map_location=cfg.device, weights_only=True)
    else:
        weights = saved_weights(model)  # (full weights: copied into the anchor below, no third copy)
        if is_main():
            torch.save(weights, path)
    if cfg.lora_rank:
        return {k: v.detach().clone() for k, v in weights.items()}
    anchor = load_policy(cfg)[0].requires_grad_(False)
    load_weights(anchor, weights, path)
    return anchor

@contextmanager
def scored_by(model, anchor):
    """The model that scores the KL reference: `anchor` itself (full weights), or `model` with the anchor's adapters
    swapped in for the time inside (LoRA: no second copy of the base)."""
    if not isinstance(anchor, dict):
        yield anchor
        return
    params = dict(model.named_parameters())
    own = {k: params[k].data for k in anchor}
    for k, v in anchor.items():
        params[k].data = v
    try:
        yield model
    finally:
        for k, v in own.items():
            params[k].data = v

# ---------------------------------------------------------------------------- forward: bf16 autocast, packed attention, recomputed layers


@contextmanager
def autocast(cfg):
    """bf16 compute on CUDA (fp32 weights), attention by any backend but cuDNN's; plain fp32 on CPU.
    cuDNN's attention builds a plan for each new sequence length, and a generate meets a new length every token
    (10x slower generation: bench/RESULTS.md)."""
    if cfg.device != "cuda":
        yield
        return
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with torch.autocast("cuda", dtype=torch.bfloat16), \
            sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
        yield


def packed_attention(module, query, key, value, attention_mask, scaling=None, **kw):
    """transformers' sdpa attention, but for one new token the query heads that share a key/value head attend as that
    head's queries, (B, H, 1, D) -> (B, H_kv, H / H_kv, D), so the KV cache is read as it is; transformers' sdpa
    copies every key/value head H / H_kv times first under torch.compile (Qwen2.5-0.5B: 14 query heads over 2 KV
    heads, so 7 copies of the cache per layer and token). Several tokens (prefill, training) go to its sdpa as they
    are; the sampling-vs-loss log-prob tests hold with it (tiny has 4 query heads over 2)."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    r = getattr(module, "num_key_value_groups", 1)
    if query.shape[2] != 1 or r == 1:
        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, **kw)
    b, h, _, d = query.shape
    out = torch.nn.functional.scaled_dot_product_attention(  # (B, H_kv, r, D): query head g * r + i is row i of g
        query.view(b, h // r, r, d), key, value, attn_mask=attention_mask, scale=scaling)
    return out.reshape(b, 1, h, d), None


def use_packed_attention(model):
    """A model on transformers' sdpa attention gets packed_attention instead (its masks stay sdpa's)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask
    AttentionInterface.register("cudal1_sdpa", packed_attention)
    AttentionMaskInterface.register("cudal1_sdpa", sdpa_mask)
    if model.config._attn_implementation == "sdpa":
        model.set_attn_implementation("cudal1_sdpa")


@contextmanager
def layers_recomputed(cfg, model):
    """A gradient pass (forward and backward inside) in which each decoder layer keeps only its input and runs again
    in backward (activation checkpointing, torch.utils.checkpoint on each layer of a transformers model's decoder).
    Without it an RL micro-batch of the 1.5B (8 samples of a 5,000-token prompt and 3,200 new tokens) would hold
    ~130 GB in bf16; with it the 28 layers' inputs, ~6 GB, and one layer's activations at a time. Costs one more
    forward. The layer runs again in backward, outside the forward's autocast(cfg): it gets autocast(cfg) again, so
    it picks the same attention backend (else checkpoint stops the update: bench/RESULTS.md).
    --recompute auto turns it on for CUDA only: on the CPU (the demo's 0.33M policy) memory is not what limits a
    step, and the extra forward would only lengthen the update."""
    on = cfg.recompute == "on" or cfg.recompute == "auto" and str(cfg.device).startswith("cuda")
    layers = getattr(model.get_decoder(), "layers", None) if on and hasattr(model, "get_decoder") else None
    for layer in layers or []:
        layer.forward = partial(checkpoint, layer.forward, use_reentrant=False,
                                context_fn=lambda: (nullcontext(), autocast(cfg)))
    try:
        yield
    finally:
        for layer in layers or []:
            del layer.forward  # the class's forward again

# ---------------------------------------------------------------------------- sampling: G completions per prompt


def eos_ids(model, tok):
    ids = model.generation_config.eos_token_id
    ids = ids if isinstance(ids, list) else [ids if ids is not None else tok.eos_token_id]
    return torch.tensor(ids)


# unset fields would be filled from the model's generation_config (e.g. Qwen's top_k=20, repetition_penalty=1.05),
# which would sample from a distribution the loss does not score: switch them off explicitly
PURE_SAMPLING = dict(top_k=0, min_p=0.0, typical_p=1.0, repetition_penalty=1.0, no_repeat_ngram_size=0)


@torch.no_grad()
def generate(cfg, model, tok, prompts, seed, on_end=None):
    """G samples of each prompt in one batch (KV-cached, prompts left-padded), after torch.manual_seed(seed); per
    prompt a rollout: its prompt ids (P,), completion ids (G, T), mask (G, T), texts, cut (G,): no eos before the
    cap. --gen-cache: graphs (auto's choice on CUDA, the fastest: bench/RESULTS.md) is decode's CUDA-graphed loop,
    static transformers' generate with a compiled decoding step; both sample the dynamic cache's tokens on the CPU.
    On CUDA compiled kernels round bf16 their own way, and the loss scores the samples with the eager forward (the
    old log-probs too), as RL on a separate inference engine does. on_end(i, j, text): sample j of prompt i as soon
    as its row ends, while the others decode (decode only; its text is the rollout's)."""
    from transformers import GenerationConfig
    graphs = cfg.gen_cache == "graphs" or (cfg.gen_cache == "auto" and cfg.device == "cuda")
    static = graphs or cfg.gen_cache == "static"
    enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    if static:  # left-padded further, to one of a few lengths
        enc = tok.pad(enc, padding="max_length", max_length=static_length(enc["input_ids"].shape[1]),
                      return_tensors="pt")
    enc = enc.to(cfg.device)
    eos = eos_ids(model, tok)
    gen = GenerationConfig(do_sample=True, temperature=cfg.temperature, top_p=cfg.top_p,
                           max_new_tokens=cfg.max_new_tokens, num_return_sequences=cfg.group_size,
                           eos_token_id=eos.tolist(), pad_token_id=tok.pad_token_id, **PURE_SAMPLING,
                           cache_implementation="static" if static else None)  # (graphs: decode's own)
    torch.manual_seed(seed)
    P, G = enc["input_ids"].shape[1], cfg.group_size
    with autocast(cfg):
        if graphs and cfg.top_p == 1:
            row_ended = on_end and (lambda row, ids: on_end(row // G, row % G, completion_text(tok, ids, eos)))
            ids = decode(cfg, model, enc, eos, seed, on_end=row_ended).cpu()  # (n * G, T): prompt i's samples: rows iG..
        else:
            ids = model.generate(**enc, generation_config=gen).cpu()[:, P:]
    ended = torch.isin(ids, eos).long()                          # (n * G, T)
    mask = (ended.cumsum(1) - ended) == 0                         # (n * G, T): tokens up to and including the first eos
    texts = [completion_text(tok, row, eos) for row in ids]
    real = enc["attention_mask"].bool().cpu()                     # (n, P): False on the left padding
    cut = ~ended.bool().any(1)                                   # (n * G,): no eos, cut at max_new_tokens
    return [dict(prompt=enc["input_ids"][i].cpu()[real[i]], ids=ids[i * G:(i + 1) * G], mask=mask[i * G:(i + 1) * G],
                 texts=texts[i * G:(i + 1) * G], cut=cut[i * G:(i + 1) * G]) for i in range(len(prompts))]


def completion_text(tok, ids, eos):
    """A sample's text: its tokens up to and including its first eos (all of them if none), decoded."""
    ended = torch.isin(ids, eos).long()                           # (T,)
    return tok.decode(ids[(ended.cumsum(0) - ended) == 0], skip_special_tokens=True)


def static_length(n):
    """The length a static cache pads n prompt tokens to: 512, 1024, 2048, ... One cache shape, so one compile, per
    length: contrastive prompts move by thousands of tokens from step to step (their exemplars' code), and finer
    buckets (256 tokens) would recompile nearly every step, until dynamo's recompile limit."""
    return 512 << max(0, math.ceil(math.log2(n / 512)))


DECODERS = {}  # decode's static cache and compiled forward, kept while the model and the batch's rows stay and its
#               prompts fit (they hold the model: DECODERS.clear() lets it go)


def decode(cfg, model, enc, eos, seed, check_every=64, on_end=None):
    """--gen-cache graphs: G samples of each left-padded prompt of enc without transformers' generate loop; (n * G, T)
    token ids. A static KV cache (kept while the rows stay and the prompts fit: DECODERS; shorter prompts are padded
    further, so a step whose prompts are shorter than the last one's compiles nothing), one forward of the prompts,
    then one forward per token, compiled on CUDA into CUDA graphs (torch.compile's reduce-overhead mode: one graph
    replay per token, the mask and cache at fixed addresses); each token drawn from softmax(logits / temperature)
    by the Gumbel-max trick, argmax(logits / t - log E) with E ~ Exp(1) from a generator seeded with seed; the loop
    ends once every row has an eos (looked at every check_every tokens: one synchronisation each). on_end(row, ids)
    at those looks, once for each row that has ended since the last: its tokens so far (CPU), its first eos among
    them; the other rows decode on meanwhile."""
    from transformers import StaticCache
    G, T = cfg.group_size, cfg.max_new_tokens
    ids, mask = enc["input_ids"].repeat_interleave(G, 0), enc["attention_mask"].repeat_interleave(G, 0)  # (N, P)
    (N, P), dev = ids.shape, ids.device
    kept = DECODERS.get("model") is model and DECODERS["shape"][0] == N and DECODERS["shape"][1] >= P + T
    if kept:  # the kept cache is longer: pad on the left up to it (masked, so the samples' distribution is the same)
        more = DECODERS["shape"][1] - T - P
        pad = torch.nn.functional.pad
        ids, mask, P = pad(ids, (more, 0)), pad(mask, (more, 0)), P + more
    else:  # a new cache and a new compile
        DECODERS.update(model=model, shape=(N, P + T), cache=StaticCache(config=model.config, max_cache_len=P + T),
                        step=torch.compile(model, mode="reduce-overhead") if cfg.device == "cuda" else model)
    cache, step = DECODERS["cache"], DECODERS["step"]
    cache.reset()
    mask = torch.cat([mask, mask.new_ones(N, T)], 1)                 # (N, P + T): every new token is attended to
    pos = (mask[:, :P].cumsum(1) - 1).clamp(min=0)                  # (N, P): positions skip the left padding
    g, kv = torch.Generator(dev).manual_seed(seed), cache_arg(model, cache)
    # the prompts' forward keeps the last position's logits alone: all of them, for 64 rows of 4,000 tokens, ~150 GB
    logits = model(input_ids=ids, attention_mask=mask, position_ids=pos, **kv, logits_to_keep=1,
                   cache_position=torch.arange(P, device=dev)).logits[:, -1]
    out, told = ids.new_empty(N, T), torch.zeros(N, dtype=torch.bool)
    for t in range(T):
        noise = torch.empty(logits.shape, device=dev).exponential_(generator=g)  # (N, V)
        out[:, t] = (logits.float() / cfg.temperature - noise.log()).argmax(-1)
        if (t + 1) % check_every == 0:
            ended = torch.isin(out[:, :t + 1], eos.to(dev)).any(1).cpu()  # (N,)
            for row in (ended & ~told).nonzero().flatten().tolist() if on_end else ():
                on_end(row, out[row, :t + 1].cpu())
            told |= ended
            if bool(ended.all()):
                return out[:, :t + 1]
        logits = step(input_ids=out[:, t:t + 1], attention_mask=mask, position_ids=pos[:, P - 1:P] + 1 + t,
                      **kv, cache_position=torch.full((1,), P + t, device=dev)).logits[:, -1]
    return out


def cache_arg(model, cache):
    """The KV cache as forward's keyword: `cache` in newer transformers (`past_key_values` is deprecated there and
    goes in 5.40), `past_key_values` in older ones (5.17)."""
    return {"cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values": cache}

# ---------------------------------------------------------------------------- log-probs: what the loss scores


def token_logps(cfg, model, samples, temperature=None):
    """Log-probs (m, T) of each sample's completion under `model` at the sampling temperature (or the one given), and
    the mask (m, T).

    Samples are (prompt (P_i,), completion (T_i,), mask (T_i,)); prompts are left-padded to one length, positions
    counted over real tokens only, so the numbers match what generate() saw.
    """
    P = max(len(p) for p, _, _ in samples)
    T = max(int(k.sum()) for _, _, k in samples)
    ids = torch.zeros(len(samples), P + T, dtype=torch.long)     # (m, P + T)
    attn = torch.zeros(len(samples), P + T, dtype=torch.long)    # (m, P + T)
    mask = torch.zeros(len(samples), T, dtype=torch.bool)        # (m, T)
    for i, (p, c, k) in enumerate(samples):
        n = int(k.sum())
        ids[i, P - len(p):P], ids[i, P:P + n] = p, c[:n]
        attn[i, P - len(p):P + n], mask[i, :n] = 1, True
    pos = (attn.cumsum(1) - 1).clamp(min=0)                      # (m, P + T)
    dev = cfg.device
    with autocast(cfg):
        logits = model(input_ids=ids.to(dev), attention_mask=attn.to(dev), position_ids=pos.to(dev),
                       logits_to_keep=T + 1, use_cache=False).logits[:, :-1]  # (m, T, V): P-1+t predicts token t
    return chosen_logps(logits, ids[:, P:].to(dev), temperature or cfg.temperature), mask.to(dev)  # (m, T), (m, T)


def chosen_logps(logits, ids, temperature):
    """log softmax(logits / temperature) at the chosen ids, (m, T) of logits (m, T, V): each chosen logit less its
    row's logsumexp, one sample at a time, so no (m, T, V) fp32 tensor of every token's log-prob is ever made (a
    selective log-softmax: the loss needs the chosen tokens' alone).

    Example: logits [[2, 0]] / 1 at ids [0] -> 2 - log(e^2 + e^0) = -0.127 = log softmax([2, 0])[0].
    """
    out = []
    for row, chosen in zip(logits, ids):  # (T, V), (T,)
        row = row.float() / temperature
        out.append(row.gather(-1, chosen[:, None]).squeeze(-1) - torch.logsumexp(row, dim=-1))
    return torch.stack(out)  # (m, T)

# ---------------------------------------------------------------------------- data parallel (torchrun)


# Every rank holds the whole policy and makes the same draws (they come from (seed, step, task)). Per step each rank
# generates for its share of the tasks and evaluates its share of the candidates; all_gather then gives every rank
# all rollouts and results, so rewards (normalised over the step), advantages and the exemplar database are the same
# everywhere. Each rank backpropagates its share of the samples with the whole batch's normalisers, and summing the
# gradients over the ranks (before clipping) gives exactly the one-process gradient. Rank 0 alone writes files.
def init_distributed(cfg):
    """Under torchrun (RANK, WORLD_SIZE, LOCAL_RANK set): join the process group (nccl and GPU LOCAL_RANK on CUDA,
    gloo on the CPU), keep stdout for rank 0; returns cfg with rank 0's run folder. A plain run: cfg unchanged."""
    if "RANK" not in os.environ or dist.is_initialized():
        return cfg
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # NVLink multicast off: it can take shared GPUs out of service
    if cfg.device == "cuda":
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))  # "cuda" now means this rank's GPU
    dist.init_process_group("nccl" if cfg.device == "cuda" else "gloo")
    if dist.get_rank() > 0:
        sys.stdout = open(os.devnull, "w")  # one copy of the config and the step lines (errors still reach stderr)
    out = [cfg.out]  # rank 0's: a default runs/<date>-<time> may differ by a second between ranks
    dist.broadcast_object_list(out, src=0)
    return replace(cfg, out=out[0])


def is_main():
    """Does this process write the run folder (rank 0, or the only process)?"""
    return not dist.is_initialized() or dist.get_rank() == 0


def barrier():
    if dist.is_initialized():
        dist.barrier()


def leave_together():
    """Under torchrun, end the process group once every rank is here: a gloo rank exiting with its group alive can
    abort (SIGABRT)."""
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def shard(items):
    """This rank's contiguous share of a list or range (shares differ by at most one); all of it in one process."""
    if not dist.is_initialized():
        return items
    rank, world = dist.get_rank(), dist.get_world_size()
    return items[len(items) * rank // world:len(items) * (rank + 1) // world]


def gather(items):
    """Every rank's list concatenated in rank order: the inverse of shard(); the list itself in one process."""
    if not dist.is_initialized():
        return items
    parts = [None] * dist.get_world_size()
    dist.all_gather_object(parts, items)
    return [x for part in parts for x in part]


def all_reduce_grads(model):
    """Sum every parameter's gradient over the ranks (one all_reduce per tensor: plain, not bucketed like DDP)."""
    if not dist.is_initialized():
        return
    for p in trainable(model):
        if p.grad is None:  # a parameter this rank's samples did not reach still joins the sum
            p.grad = torch.zeros_like(p)
        dist.all_reduce(p.grad)


def optimizer_step(cfg, model, opt):
    """Sum the gradients over torchrun's ranks, clip their norm (max_grad_norm; 0 = off), take the AdamW step at lr x
    min(1, k / warmup_steps), k this AdamW's steps from 1 (moments kept from --init-from keep their count: a fresh
    AdamW's first steps move every weight by about lr); returns the norm before clipping."""
    all_reduce_grads(model)
    norm = torch.nn.utils.clip_grad_norm_(trainable(model), cfg.max_grad_norm or float("inf"))
    k = 1 + max((int(st["step"]) for st in opt.state.values() if "step" in st), default=0)
    for group in opt.param_groups:
        group["lr"] = cfg.lr * min(1.0, k / cfg.warmup_steps) if cfg.warmup_steps else cfg.lr
    opt.step()
    return float(norm)


def exit_rank():
    """A torchrun rank that ran to the end leaves without the interpreter's teardown, where a gloo rank aborted now
    and then ("terminate called without an active exception", SIGABRT) after its group was destroyed
    (tests/test_ddp.py). Outside torchrun: nothing."""
    if "RANK" in os.environ:
        sys.stdout.flush(), sys.stderr.flush()
        os._exit(0)
