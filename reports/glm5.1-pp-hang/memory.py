"""Per-GPU memory of GLM-5.1 LoRA SFT at PP=1/2/4/8 (TP=4, EP=8, ETP=1, 128 GPUs): the arithmetic
behind the README's OOM and PP=8 rows, so that every number there can be re-derived.

    python reports/glm5.1-pp-hang/memory.py            # markdown tables, as pasted in the README

Model shape: GLM-5.1's published config.json (glm_moe_dsa; GLM-5.1 shares GLM-5's architecture),
values listed in GLM51 below with where each was read. Module layout: megatron-core 0.17.0 as
mcore-bridge 1.4.1 builds glm_moe_dsa (multi-latent attention with TE: the down projections are
duplicated across TP, the up/out projections sharded; the DSA indexer's linears are duplicated;
routed experts split by EP with expert_tensor_parallel_size 1, ms-swift 4.3.0's default; shared
expert, dense MLP, embedding and output layer sharded by TP). MTP is off: mcore-bridge maps no
num_nextn_predict_layers and ms-swift's mtp_num_layers defaults to None. Standard library only.
"""

from __future__ import annotations

GiB = 2**30
GB = 10**9

# zai-org/GLM-5.1 config.json (glm_moe_dsa); the same values are GLM-5's config.json (mirrored as
# unsloth/GLM-5) and NVIDIA NeMo AutoModel's GlmMoeDsaConfig defaults; num_hidden_layers 78,
# hidden_size 6144, num_attention_heads 64, n_routed_experts 256 are also rules/mcore-bridge.toml's
# [[model]] entry.
GLM51 = {
    "num_hidden_layers": 78,
    "first_k_dense_replace": 3,       # layers 0-2 dense MLP, 3-77 MoE
    "hidden_size": 6144,
    "intermediate_size": 12288,       # dense MLP
    "moe_intermediate_size": 2048,    # each routed / shared expert
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "num_attention_heads": 64,
    "q_lora_rank": 2048,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 192,
    "qk_rope_head_dim": 64,
    "v_head_dim": 256,
    "index_n_heads": 32,
    "index_head_dim": 128,
    "index_topk": 2048,
    "vocab_size": 154880,
    "tie_word_embeddings": False,
}

# The seed script (examples/glm5_1_lora_pp4.sh) and the report's table.
TP, EP, ETP = 4, 8, 1
WORLD = 128
SEQ = 8192            # --max_length 8192 --packing true: up to 8192 tokens per micro-batch
MICRO_BATCH = 1
GLOBAL_BATCH = 32
LORA_RANK = 8         # --lora_rank 8 --target_modules all-linear
BF16 = 2
FP32 = 4
HBM_GB = 80           # H800 SXM


def attention_params(c: dict) -> tuple[int, int]:
    """(duplicated on every TP rank, sharded over TP) parameters of one MLA + DSA layer."""
    h, heads = c["hidden_size"], c["num_attention_heads"]
    q_head = c["qk_nope_head_dim"] + c["qk_rope_head_dim"]
    duplicated = (h * c["q_lora_rank"] + c["q_lora_rank"]                      # q down + q norm
                  + h * (c["kv_lora_rank"] + c["qk_rope_head_dim"]) + c["kv_lora_rank"]
                  + c["q_lora_rank"] * c["index_n_heads"] * c["index_head_dim"]  # indexer wq_b
                  + h * c["index_head_dim"] + 2 * c["index_head_dim"]            # wk, k_norm
                  + h * c["index_n_heads"]                                       # weights_proj
                  + 2 * h)                                                       # layer norms
    sharded = (c["q_lora_rank"] * heads * q_head
               + c["kv_lora_rank"] * heads * (c["qk_nope_head_dim"] + c["v_head_dim"])
               + heads * c["v_head_dim"] * h)
    return duplicated, sharded


def layer_params_per_gpu(c: dict, moe: bool) -> int:
    duplicated, sharded = attention_params(c)
    h = c["hidden_size"]
    n = duplicated + sharded // TP
    if not moe:
        return n + 3 * h * c["intermediate_size"] // TP
    expert = 3 * h * c["moe_intermediate_size"]        # SwiGLU fc1 (2x) + fc2
    return (n + c["n_routed_experts"] // EP * expert // ETP
            + c["n_shared_experts"] * expert // TP + h * c["n_routed_experts"])


def lora_params_per_gpu(c: dict, moe: bool) -> int:
    """LoRA A and B of one layer on one GPU, as mcore-bridge 1.4.1's tuners/lora.py builds them for
    ms-swift's all-linear (every TELinear, TELayerNormColumnParallelLinear and TEGroupedLinear but
    output_layer; not the router): duplicated in*r + r*out; column-parallel in*r + r*out/TP;
    row-parallel in/TP*r + r*out; grouped experts (ETP 1) in*r + r*out per local expert."""
    r, h, heads = LORA_RANK, c["hidden_size"], c["num_attention_heads"]
    q_head = c["qk_nope_head_dim"] + c["qk_rope_head_dim"]

    def dup_lora(i: int, o: int) -> int:
        return r * (i + o)

    def col_lora(i: int, o: int) -> int:
        return r * (i + o // TP)

    def row_lora(i: int, o: int) -> int:
        return r * (i // TP + o)

    n = (dup_lora(h, c["q_lora_rank"]) + col_lora(c["q_lora_rank"], heads * q_head)
         + dup_lora(h, c["kv_lora_rank"] + c["qk_rope_head_dim"])
         + col_lora(c["kv_lora_rank"], heads * (c["qk_nope_head_dim"] + c["v_head_dim"]))
         + row_lora(heads * c["v_head_dim"], h)
         + dup_lora(c["q_lora_rank"], c["index_n_heads"] * c["index_head_dim"])
         + dup_lora(h, c["index_head_dim"]) + dup_lora(h, c["index_n_heads"]))
    if not moe:
        return n + col_lora(h, 2 * c["intermediate_size"]) + row_lora(c["intermediate_size"], h)
    ffn = c["moe_intermediate_size"]
    routed = c["n_routed_experts"] // EP * (dup_lora(h, 2 * ffn) + dup_lora(ffn, h))
    shared = col_lora(h, 2 * ffn * c["n_shared_experts"]) + row_lora(ffn * c["n_shared_experts"], h)
    return n + routed + shared


def stage_layers(pp: int, first: int | None, last: int | None, total: int) -> list[int] | str:
    """Layers per stage as megatron-core 0.17 splits them, or why it refuses to
    (TransformerConfig.__post_init__, transformer_config.py:1571-1585; get_num_layers_to_build)."""
    if first is None and last is None:
        if total % pp:
            return f"AssertionError: num_layers={total} should be divisible by {pp=}"
        return [total // pp] * pp
    middle, stages = total - (first or 0) - (last or 0), pp - (first is not None) - (last is not None)
    if bool(middle) != bool(stages):
        return f"ValueError: Mismatch: {middle} middle layers remaining but {stages} middle PP stages"
    if stages and middle % stages:
        return (f"ValueError: number of layers at middle stage: {middle} must be divisible by"
                f"the middle pipeline model parallel size {stages}")
    split = [middle // stages] * stages if stages else []
    return ([first] if first is not None else []) + split + ([last] if last is not None else [])


def stage_lora(c: dict, layers: list[int]) -> list[int]:
    out, start = [], 0
    for n in layers:
        out.append(sum(lora_params_per_gpu(c, moe=k >= c["first_k_dense_replace"])
                       for k in range(start, start + n)))
        start += n
    return out


def stage_params(c: dict, layers: list[int]) -> list[int]:
    out, start = [], 0
    embed = c["vocab_size"] * c["hidden_size"] // TP
    for i, n in enumerate(layers):
        ids = range(start, start + n)
        p = sum(layer_params_per_gpu(c, moe=k >= c["first_k_dense_replace"]) for k in ids)
        p += embed * (i == 0) + embed * (i == len(layers) - 1) + c["hidden_size"] * (i == len(layers) - 1)
        out.append(p)
        start += n
    return out


def total_params(c: dict) -> int:
    """The whole model, unsharded (a check against the published ~744B for GLM-5 without MTP)."""
    duplicated, sharded = attention_params(c)
    h, e = c["hidden_size"], 3 * c["hidden_size"] * c["moe_intermediate_size"]
    dense = c["first_k_dense_replace"]
    moe = c["num_hidden_layers"] - dense
    return (c["num_hidden_layers"] * (duplicated + sharded) + dense * 3 * h * c["intermediate_size"]
            + moe * ((c["n_routed_experts"] + c["n_shared_experts"]) * e + h * c["n_routed_experts"])
            + 2 * c["vocab_size"] * h + h)


def activation_terms(c: dict) -> dict[str, int]:
    """Bytes per GPU of the activation terms that matter at SEQ tokens, TP=4 with sequence
    parallelism, --recompute_granularity full --recompute_method uniform --recompute_num_layers 1."""
    h, s = c["hidden_size"], SEQ * MICRO_BATCH
    routed_tokens = s // TP * c["num_experts_per_tok"]  # a rank's SP shard, top-8, balanced over EP
    return {
        # What one pipeline P2P message carries, and what full recompute keeps per layer.
        "p2p_message": s // TP * h * BF16,
        "checkpoint_per_layer": s // TP * h * BF16,
        # The working set while one layer runs (forward, or its recompute in backward), from
        # megatron-core 0.17's unfused DSA (dsa.py): index scores einsum 'sbhd,tbd->sbht' in fp32
        # over all 32 indexer heads (not split by TP, input gathered from SP), and the sparse
        # attention's fp32 scores [b * heads/TP, s, s].
        "dsa_index_scores": s * c["index_n_heads"] * s * FP32,
        "dsa_attention_scores": c["num_attention_heads"] // TP * s * s * FP32,
        "moe_dispatched_tokens": routed_tokens * (h + 2 * c["moe_intermediate_size"]
                                                  + c["moe_intermediate_size"]) * BF16,
    }


def row(pp: int, first: int | None, last: int | None, c: dict) -> dict:
    layers = stage_layers(pp, first, last, c["num_hidden_layers"])
    dp = WORLD // (TP * pp)
    out = {"dp": dp, "microbatches": GLOBAL_BATCH // (MICRO_BATCH * dp), "layers": layers}
    if isinstance(layers, list):
        out["params"] = stage_params(c, layers)
        out["lora"] = stage_lora(c, layers)
    return out


def fmt_split(first: int | None, last: int | None) -> str:
    parts = [f"first {first}" if first is not None else "", f"last {last}" if last is not None else ""]
    return ", ".join(p for p in parts if p) or "even"


def main() -> None:
    c = GLM51
    act = activation_terms(c)
    print(f"GLM-5.1 without MTP: {total_params(c) / 1e9:.1f}B parameters in all "
          f"(published: 744B for GLM-5; 754B for GLM-5.1 counts the MTP layer)\n")
    cases = [(1, None, None), (2, None, None), (4, None, 18), (8, None, 18), (8, None, 22), (8, 9, 9)]
    print("| PP | split | DP | micro-batches | layers per stage | params per GPU, largest stage "
          "| bf16 weights | weights alone fit 80 GB? |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for pp, first, last in cases:
        r = row(pp, first, last, c)
        if "params" not in r:
            print(f"| {pp} | {fmt_split(first, last)} | {r['dp']} | {r['microbatches']} "
                  f"| {r['layers']} | - | - | never starts |")
            continue
        worst = max(r["params"])
        weights = worst * BF16
        fits = "no" if weights > HBM_GB * GB else f"yes, {HBM_GB - weights / GB:.0f} GB left"
        layers = "/".join(map(str, r["layers"]))
        print(f"| {pp} | {fmt_split(first, last)} | {r['dp']} | {r['microbatches']} | {layers} "
              f"| {worst / 1e9:.1f}B (all stages: "
              f"{', '.join(f'{p / 1e9:.1f}' for p in r['params'])}) "
              f"| {weights / GB:.1f} GB | {fits} |")
    print()
    print("Per-rank log line ms-swift prints after LoRA injection (model_parameter_info, all "
          "parameters incl. LoRA / trainable LoRA), first stage, which rank 0 belongs to:")
    for pp, first, last in cases:
        r = row(pp, first, last, c)
        if "params" in r:
            base, lora = r["params"][0], r["lora"][0]
            print(f"  PP={pp} ({fmt_split(first, last)}): {(base + lora) / 1e9:.1f}B params, "
                  f"{lora / 1e6:.0f}M trainable")
    print()
    print("| activation term (per GPU) | bytes |")
    print("| --- | --- |")
    for name, value in act.items():
        print(f"| {name} | {value / 2**20:,.0f} MiB |")
    print()
    peak = 2 * act["dsa_index_scores"]  # the einsum's output and relu's same-size result coexist
    print(f"Peak working set of one layer: {peak / GiB:.0f} GiB (the indexer's fp32 scores and "
          f"relu's copy of them; the attention scores, {act['dsa_attention_scores'] / GiB:.0f} GiB, "
          f"and the MoE tokens come later in the layer)\n")
    print("| PP | stage | bf16 weights | LoRA + its grads and Adam states | stored checkpoints "
          "| one layer's peak | estimate |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for pp, first, last in [(4, None, 18), (8, 9, 9)]:
        r = row(pp, first, last, c)
        for i, (n, base, lora) in enumerate(zip(r["layers"], r["params"], r["lora"])):
            in_flight = min(pp - i, r["microbatches"])  # 1F1B: warm-up forwards plus one
            stored = n * in_flight * act["checkpoint_per_layer"]
            weights = base * BF16
            adapter = lora * (BF16 + FP32 * 3)  # bf16 weight; fp32 main grad, Adam m and v
            total = weights + adapter + stored + peak
            print(f"| {pp} | {i} ({n} layers) | {weights / GB:.1f} GB | {adapter / GB:.1f} GB "
                  f"| {stored / GB:.1f} GB | {peak / GB:.1f} GB | {total / GB:.0f} GB |")


if __name__ == "__main__":
    main()
