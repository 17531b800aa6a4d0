"""torch.ops.tileops.*: every registered operator against tileops' direct call (same kernels:
the results must be equal, so a wrong argument order cannot hide) and the main ones against
torch; the declared mutations, the meta kernels' shapes, torch.jit.script/trace, and a small
Llama block written with torch.ops.tileops against the same block in plain torch."""

import math

import pytest
import torch

from conftest import assert_close, make, poisoned
from tileops import ops
import tileops.torch_ops as torch_ops

T = torch.ops.tileops

VLLM_NAMES = {
    "silu_and_mul", "mul_and_silu", "gelu_and_mul", "gelu_tanh_and_mul", "fatrelu_and_mul",
    "gelu_new", "gelu_fast", "gelu_quick", "rms_norm", "fused_add_rms_norm", "rotary_embedding",
    "reshape_and_cache", "reshape_and_cache_flash", "paged_attention_v1", "paged_attention_v2",
    "swap_blocks", "copy_blocks"}
# The tileops.ops operator of a torch name that differs (vLLM has copy_blocks).
TILEOPS_NAMES = {"copy_cache_blocks": "copy_blocks", "flash_attention_with_lse": "flash_attention"}
# The arguments an operator writes, where they are not one `out` (vLLM's forms) or none
# (tileops' functional forms).
WRITES = {"silu_and_mul": {"result"}, "rms_norm": {"result"}, "fused_add_rms_norm": {"input", "residual"}, "rotary_embedding": {"query", "key"},
          "reshape_and_cache": {"key_cache", "value_cache"},
          "reshape_and_cache_flash": {"key_cache", "value_cache"},
          "paged_attention_v2": {"out", "exp_sums", "max_logits", "tmp_out"},
          "swap_blocks": {"dst"}, "copy_blocks": {"key_caches", "value_caches"},
          "copy_cache_blocks": {"cache"},
          "top_k_top_p_mask": {"logits"}}


def same(a, b):
    """Equal values, NaN where NaN (the same kernels ran)."""
    assert a.shape == b.shape and a.dtype == b.dtype
    assert torch.equal(torch.nan_to_num(a.double(), 7.0), torch.nan_to_num(b.double(), 7.0))


def test_schemas_declare_what_is_written():
    assert VLLM_NAMES <= set(torch_ops.SCHEMAS)
    for name in torch_ops.SCHEMAS:
        schema = getattr(T, name).default._schema
        written = {a.name for a in schema.arguments if a.alias_info and a.alias_info.is_write}
        returns_tensors = len(schema.returns) > 0
        # vLLM's forms write their outputs and return nothing; the functional ones write nothing.
        assert written == WRITES.get(name, {"out"} if not returns_tensors else set()), name


def test_functional_schemas_name_the_arguments_as_tileops_ops_does():
    """The functional forms keep tileops.ops' argument names, in its order (outputs left out)."""
    for name in torch_ops.SCHEMAS:
        if name in VLLM_NAMES:
            continue
        ours = [a.name for a in getattr(T, name).default._schema.arguments]
        signature = getattr(ops, TILEOPS_NAMES.get(name, name)).__doc__.split("\n")[0]
        theirs = [a.split(":")[0].strip().lstrip("*") for a in
                  signature[signature.index("(") + 1:signature.index(")")].split(",")]
        it = iter(theirs)
        assert all(a in it for a in ours), f"{name}: {ours} not in the order of {theirs}"


GATED = ["silu_and_mul", "mul_and_silu", "gelu_and_mul", "gelu_tanh_and_mul", "fatrelu_and_mul"]


@pytest.mark.parametrize("name", GATED + ["gelu_new", "gelu_fast", "gelu_quick"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_activations_match_direct_calls(name, dtype):
    x = make((3, 2 * 19), dtype, "strided", seed=1)
    d = x.shape[-1] // 2 if name in GATED else x.shape[-1]
    got = poisoned((3, d), dtype, "strided")
    args = (0.25,) if name == "fatrelu_and_mul" else ()
    getattr(T, name)(got, x, *args)
    if name in GATED:
        same(got, getattr(ops, name)(x, *args))
    else:
        same(got, getattr(ops, name)(x))


def test_silu_and_mul_and_rms_norms_against_torch():
    x = make((5, 2 * 33), torch.float32, "strided", seed=2)
    out = poisoned((5, 33), torch.float32)
    T.silu_and_mul(out, x)
    assert_close(out, torch.nn.functional.silu(x[:, :33].double()) * x[:, 33:].double(),
                 torch.float32)
    h, w = make((4, 48), torch.bfloat16, "strided", seed=3), make((48,), torch.bfloat16, seed=4)
    out = poisoned((4, 48), torch.bfloat16, "strided")
    T.rms_norm(out, h, w, 1e-5)
    hd = h.double()
    ref = hd * torch.rsqrt(hd.pow(2).mean(-1, keepdim=True) + 1e-5) * w.double()
    assert_close(out, ref, torch.bfloat16)
    # fused_add_rms_norm: residual += input, input = rms_norm(residual), both in place.
    x, r = make((4, 48), torch.float32, seed=5), make((4, 48), torch.float32, "strided", seed=6)
    s = x.double() + r.double()
    T.fused_add_rms_norm(x, r, w.float(), 1e-6)
    assert_close(r, s, torch.float32)
    assert_close(x, s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + 1e-6) * w.double(),
                 torch.float32)


def rope_cache(rot, max_pos=64):
    inv = 1.0 / (10000.0 ** (torch.arange(0, rot, 2, dtype=torch.float64) / rot))
    f = torch.arange(max_pos, dtype=torch.float64)[:, None] * inv[None]
    return torch.cat((f.cos(), f.sin()), -1).float()


def rope_ref(x, positions, cache, head_size):
    """vLLM's neox rotary in float64 over x [T, H*D]."""
    y = x.double().reshape(x.shape[0], -1, head_size)
    cos, sin = cache.double()[positions].chunk(2, -1)
    cos, sin = cos[:, None], sin[:, None]
    half = cache.shape[1] // 2
    a, b = y[..., :half], y[..., half:2 * half]
    rot = torch.cat((a * cos - b * sin, b * cos + a * sin, y[..., 2 * half:]), -1)
    return rot.reshape(x.shape)


def test_rotary_embedding_in_place_with_and_without_key():
    positions = torch.tensor([3, 0, 17, 9])
    cache = rope_cache(8)
    q, k = make((4, 3 * 16), torch.float32, seed=7), make((4, 16), torch.float32, seed=8)
    q0, k0 = q.clone(), k.clone()
    T.rotary_embedding(positions, q, k, 16, cache, True)
    assert_close(q, rope_ref(q0, positions, cache, 16), torch.float32)
    assert_close(k, rope_ref(k0, positions, cache, 16), torch.float32)
    q2 = q0.clone()
    T.rotary_embedding(positions, q2, None, 16, cache, False)
    ops.rotary_embedding(positions, q0, None, 16, cache, False)
    same(q2, q0)


def vllm_caches(blocks, hkv, d, block, dtype, x):
    kc = torch.full((blocks, hkv, d // x, block, x), float("nan"), dtype=dtype)
    return kc, torch.full((blocks, hkv, d, block), float("nan"), dtype=dtype)


def test_cache_writes_and_paged_attention_match_direct_calls():
    dtype, hkv, h, d, block = torch.float32, 2, 4, 16, 4
    key, value = make((6, hkv, d), dtype, seed=9), make((6, hkv, d), dtype, seed=10)
    slots = torch.tensor([5, 0, -1, 9, 10, 11])
    caches = [vllm_caches(4, hkv, d, block, dtype, 4) for _ in range(2)]
    T.reshape_and_cache(key, value, caches[0][0], caches[0][1], slots)
    ops.reshape_and_cache(key, value, caches[1][0].permute(0, 3, 1, 2, 4),
                          caches[1][1].permute(0, 3, 1, 2), slots)
    same(caches[0][0], caches[1][0])
    same(caches[0][1], caches[1][1])
    flash = [torch.full((4, block, hkv, d), float("nan")) for _ in range(4)]
    T.reshape_and_cache_flash(key, value, flash[0], flash[1], slots, "auto")
    ops.reshape_and_cache(key, value, flash[2], flash[3], slots)
    same(flash[0], flash[2])
    same(flash[1], flash[3])

    # Two sequences of 6 and 3 keys over the written slots (the unwritten ones set to 0).
    query = make((2, h, d), dtype, seed=11)
    tables, lens = torch.tensor([[1, 0, 2], [2, 3, 0]], dtype=torch.int32), torch.tensor([6, 3])
    kc, vc = (c.nan_to_num_(0.0) for c in caches[0])
    v1, v2 = poisoned((2, h, d), dtype), poisoned((2, h, d), dtype)
    T.paged_attention_v1(v1, query, kc, vc, hkv, 0.25, tables, lens, block, 3)
    work = [torch.empty(2, h, 1), torch.empty(2, h, 1), torch.empty(2, h, 1, d)]
    T.paged_attention_v2(v2, *work, query, kc, vc, hkv, 0.25, tables, lens, block, 3, None, "auto")
    ref = ops.paged_attention(query, kc.permute(0, 3, 1, 2, 4), vc.permute(0, 3, 1, 2), lens,
                              tables, num_kv_heads=hkv, scale=0.25, block_size=block)
    same(v1, ref)
    same(v2, ref)


def test_block_copies_and_top_k_top_p_mask():
    src, dst = make((4, 3, 5), torch.float32, seed=12), torch.zeros(4, 3, 5)
    mapping = torch.tensor([[0, 2], [3, 1]])
    T.swap_blocks(src, dst, mapping)
    same(dst[[2, 1]], src[[0, 3]])
    keys = [make((4, 6), torch.float32, seed=s) for s in (13, 14)]
    values = [make((4, 6), torch.float32, seed=s) for s in (15, 16)]
    want = [c.clone() for c in keys + values]
    for c in want:
        c[2] = c[0]
        c[1] = c[3]
    T.copy_blocks(keys, values, mapping)
    for got, ref in zip(keys + values, want):
        same(got, ref)
    one, want = make((4, 6), torch.float32, seed=18), None
    want = one.clone()
    ops.copy_blocks(want, mapping)
    T.copy_cache_blocks(one, mapping)  # one cache per call (what TorchScript keeps)
    same(one, want)
    logits = make((3, 10), torch.float32, seed=17)
    expected = logits.clone()
    ops.top_k_top_p_mask(expected, torch.tensor([1, 4, 10]), torch.tensor([1.0, 1.0, 0.5]))
    T.top_k_top_p_mask(logits, torch.tensor([1, 4, 10]), torch.tensor([1.0, 1.0, 0.5]))
    same(logits, expected)


def functional_cases():
    """(name, args) of each functional operator, inputs strided where the operator allows."""
    f, b = torch.float32, torch.bfloat16
    x, y = make((3, 20), f, "strided", seed=20), make((20,), f, seed=21)
    q, k = make((5, 2 * 8), f, seed=22), make((5, 8), f, seed=23)
    cs = [make((5, 4), f, seed=s) for s in (24, 25)]
    qa, ka, va = (make((6, 4, 8), f, seed=26), make((6, 2, 8), f, seed=27),
                  make((6, 2, 8), f, seed=28))
    return [("add", (x, y)), ("mul", (x, y)), ("swiglu", (x, make((3, 20), f, seed=29))),
            ("causal_softmax", (make((2, 3, 5), f, seed=30),)),
            ("scaled_softmax", (x, 0.5)), ("cast", (x, b)),
            ("cat", ([x, make((2, 20), f, seed=31)], 0)),
            ("embedding", (torch.tensor([[3, 0], [1, 3]]), make((4, 6), b, seed=32))),
            ("linear", (x, make((7, 20), f, seed=33), make((7,), f, seed=34))),
            ("matmul", (make((2, 3, 6), f, seed=35), make((4, 6), f, seed=36), False, True)),
            ("apply_rotary_pos_emb", (q, k, cs[0], cs[1], 8, True)),
            ("flash_attention", (qa, ka, va, torch.tensor([0, 2, 6]), torch.tensor([0, 2, 6]),
                                 None, 0.3, True)),
            ("flash_attention_with_lse", (qa, ka, va, torch.tensor([0, 2, 6]),
                                          torch.tensor([0, 2, 6]), None, 0.3, True))]


def direct(name, args):
    if name == "cast":
        return ops.cast(args[0], dtype=args[1])
    if name == "matmul":
        return ops.matmul(args[0], args[1], trans_a=args[2], trans_b=args[3])
    if name == "apply_rotary_pos_emb":
        return ops.apply_rotary_pos_emb(*args, torch.empty_like(args[0]),
                                        torch.empty_like(args[1]))
    if name == "flash_attention":
        return ops.flash_attention(*args[:6], scale=args[6], causal=args[7])
    if name == "flash_attention_with_lse":
        return ops.flash_attention(*args[:6], scale=args[6], causal=args[7],
                                   return_softmax_lse=True)
    return getattr(ops, name)(*args)


@pytest.mark.parametrize("name,args", functional_cases(), ids=lambda c: c if isinstance(c, str)
                         else "")
def test_functional_ops_match_direct_calls_and_meta_shapes(name, args):
    got, ref = getattr(T, name)(*args), direct(name, args)
    for g, r in zip(got, ref) if isinstance(got, tuple) else [(got, ref)]:
        same(g, r)

    def meta(a):
        if isinstance(a, torch.Tensor):
            return torch.empty_strided(a.shape, a.stride(), dtype=a.dtype, device="meta")
        return [meta(t) for t in a] if isinstance(a, list) else a

    # torch 1.13 has no Meta fallthrough for autograd: meta tensors are dispatched under
    # inference_mode (torch >= 2 uses the fake kernel without it).
    with torch.inference_mode():
        fake = getattr(T, name)(*[meta(a) for a in args])
    for m, r in zip(fake, ref) if isinstance(fake, tuple) else [(fake, ref)]:
        assert m.device.type == "meta" and m.shape == r.shape and m.dtype == r.dtype, name


def test_functional_ops_against_torch():
    x, w, bias = (make((3, 20), torch.float32, "strided", seed=40),
                  make((7, 20), torch.float32, seed=41), make((7,), torch.float32, seed=42))
    assert_close(T.linear(x, w, bias), x.double() @ w.double().T + bias.double(), torch.float32)
    assert_close(T.linear(x, w), x.double() @ w.double().T, torch.float32)
    a, b = make((2, 3, 6), torch.float32, seed=43), make((4, 6), torch.float32, seed=44)
    assert_close(T.matmul(a, b, False, True), a.double() @ b.double().T, torch.float32)
    assert_close(T.add(x, bias[:1]), x.double() + bias[:1].double(), torch.float32)
    assert_close(T.cat([x, x[:1]], 0), torch.cat([x, x[:1]]).double(), torch.float32)
    assert T.cast(x, torch.bfloat16).dtype == torch.bfloat16


def test_mutating_ops_accept_meta_tensors():
    with torch.inference_mode():
        out, x = torch.empty(4, 8, device="meta"), torch.empty(4, 16, device="meta")
        T.silu_and_mul(out, x)
        T.rms_norm(out, out, torch.empty(8, device="meta"), 1e-6)
        T.fused_add_rms_norm(out, out.clone(), torch.empty(8, device="meta"), 1e-6)


def test_errors_keep_tileops_types():
    x = torch.rand(3, 8)
    with pytest.raises(ValueError, match="weight"):
        T.rms_norm(torch.empty(3, 8), x, torch.rand(7), 1e-6)
    with pytest.raises(TypeError):
        T.silu_and_mul(torch.empty(3, 4, dtype=torch.int32), x.int())
    with pytest.raises(ValueError, match="kv_cache_dtype"):
        T.reshape_and_cache(torch.rand(1, 2, 16), torch.rand(1, 2, 16),
                            *vllm_caches(2, 2, 16, 4, torch.float32, 4), torch.tensor([0]),
                            "int4")


# ---- a Llama block: attention + MLP, written with torch.ops.tileops and in plain torch ------

H, HKV, D, HIDDEN, INTER, SEQ = 4, 2, 16, 64, 96, 7
EPS = 1e-5


def block_weights():
    g = torch.Generator().manual_seed(50)

    def w(*shape):
        return torch.randn(*shape, generator=g) / math.sqrt(shape[-1])

    return {"ln1": 1 + 0.1 * torch.randn(HIDDEN, generator=g), "wq": w(H * D, HIDDEN),
            "wk": w(HKV * D, HIDDEN), "wv": w(HKV * D, HIDDEN), "wo": w(HIDDEN, H * D),
            "ln2": 1 + 0.1 * torch.randn(HIDDEN, generator=g), "w_gate_up": w(2 * INTER, HIDDEN),
            "w_down": w(HIDDEN, INTER), "cache": rope_cache(D)}


def tileops_block(x: torch.Tensor, positions: torch.Tensor, ln1: torch.Tensor, wq: torch.Tensor,
                  wk: torch.Tensor, wv: torch.Tensor, wo: torch.Tensor, ln2: torch.Tensor,
                  w_gate_up: torch.Tensor, w_down: torch.Tensor,
                  cache: torch.Tensor) -> torch.Tensor:
    # Sizes from the weights: TorchScript does not read Python globals of type float/int.
    t, d, eps = x.shape[0], cache.shape[1], 1e-5
    heads, kv_heads = wq.shape[0] // d, wk.shape[0] // d
    h = torch.empty_like(x)
    torch.ops.tileops.rms_norm(h, x, ln1, eps)
    q = torch.ops.tileops.linear(h, wq, None)
    k = torch.ops.tileops.linear(h, wk, None)
    v = torch.ops.tileops.linear(h, wv, None)
    torch.ops.tileops.rotary_embedding(positions, q, k, d, cache, True)
    attn = torch.ops.tileops.flash_attention(q.view(t, heads, d), k.view(t, kv_heads, d),
                                             v.view(t, kv_heads, d), None, None, None, 0.0, True)
    hidden = torch.ops.tileops.linear(attn.view(t, heads * d), wo, None)
    residual = x.clone()
    torch.ops.tileops.fused_add_rms_norm(hidden, residual, ln2, eps)  # hidden: normed sum
    gate_up = torch.ops.tileops.linear(hidden, w_gate_up, None)
    act = torch.empty(t, w_down.shape[1], dtype=x.dtype)
    torch.ops.tileops.silu_and_mul(act, gate_up)
    return torch.ops.tileops.add(torch.ops.tileops.linear(act, w_down, None), residual)


def torch_block(x, positions, ln1, wq, wk, wv, wo, ln2, w_gate_up, w_down, cache):
    def norm(v, w):
        return v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + EPS) * w

    t = x.shape[0]
    h = norm(x, ln1)
    q = rope_ref(h @ wq.T, positions, cache, D).view(t, H, D).transpose(0, 1)
    k = rope_ref(h @ wk.T, positions, cache, D).view(t, HKV, D).transpose(0, 1)
    v = (h @ wv.T).view(t, HKV, D).transpose(0, 1)
    k, v = k.repeat_interleave(H // HKV, 0), v.repeat_interleave(H // HKV, 0)
    scores = (q @ k.transpose(1, 2)) / math.sqrt(D)
    scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
    attn = (torch.softmax(scores, -1) @ v).transpose(0, 1).reshape(t, H * D)
    residual = x + attn @ wo.T
    gate, up = (norm(residual, ln2) @ w_gate_up.T).chunk(2, -1)
    return (torch.nn.functional.silu(gate) * up) @ w_down.T + residual


def test_llama_block_eager_script_and_trace_match_plain_torch():
    w = block_weights()
    x = torch.randn(SEQ, HIDDEN, generator=torch.Generator().manual_seed(51))
    positions = torch.tensor([0, 1, 2, 3, 4, 5, 6])
    args = (x, positions, *w.values())
    ref = torch_block(*[a.double() if a.is_floating_point() else a for a in args])
    scripted = torch.jit.script(tileops_block)
    traced = torch.jit.trace(tileops_block, args)
    for graph in (str(scripted.graph), str(traced.graph)):
        assert "tileops::flash_attention" in graph and "tileops::rotary_embedding" in graph
    # float32 with float32 accumulation over K <= 96 against float64: 1e-5 + 1e-5 |ref| covers
    # the rounding of the chained products and softmax (measured max error 5e-7, |ref| <= 4.2);
    # one swapped position gives 0.5.
    for run in (tileops_block, scripted, traced):
        got = run(*args)
        err = (got.double() - ref).abs()
        assert bool((err <= 1e-5 + 1e-5 * ref.abs()).all()), f"max error {err.max()}"
    assert x.equal(args[0])  # the block's input is read only


def norm_and_copy_in_place(x: torch.Tensor, r: torch.Tensor, w: torch.Tensor,
                           mapping: torch.Tensor) -> torch.Tensor:
    torch.ops.tileops.fused_add_rms_norm(x, r, w, 1e-6)
    torch.ops.tileops.copy_cache_blocks(r, mapping)
    return r


def test_mutation_is_visible_through_script_and_trace():
    mapping = torch.tensor([[0, 1]])
    example = (torch.rand(2, 8), torch.rand(2, 8), torch.rand(8), mapping)
    scripted = torch.jit.script(norm_and_copy_in_place)
    traced = torch.jit.trace(norm_and_copy_in_place, example)
    for run in (norm_and_copy_in_place, scripted, traced):
        x, r, w = torch.rand(2, 8), torch.rand(2, 8), torch.rand(8)
        s = x + r
        s[1] = s[0]
        assert run(x, r, w, mapping) is r
        same(r, s)
        assert not torch.allclose(x[0], s[0])
