"""InfiniOps' Python surface (``infini.ops``) over :mod:`tileops.ops`.

``import tileops.infini as ops`` replaces ``import infini.ops as ops``: the operators keep
InfiniOps' names, argument order, keyword names, defaults and overloads, take the keyword-only
``stream=0`` and ``implementation_index=0``, write into the outputs the caller passes and return
None. Each operator also has its class (``ops.RmsNorm``) with the class methods
``active_implementation_indices(device)`` and ``clear_cache()``. The calls map onto tileops'
operators without copying tensor data (transposes and slices are views).

The surface followed is InfiniOps' Ascend operator line (``src/base/*.h`` and ``tests/`` of its
``chore/ascend-save-may-12`` snapshot, plus ``apply_rotary_pos_emb`` and ``topk_topp_sampling``
of ``feat/ascend-operators``). Where InfiniOps' behaviour is an Ascend artefact, the contract its
tests check is kept:

- ``stream``: 0 (InfiniOps' null stream) and None mean the CPU; any other stream is passed on and
  refused by tileops (ValueError).
- ``reshape_and_cache(key, value, kv_cache, slot_mapping, kv_cache_out)``: the tokens are
  scattered into ``kv_cache_out`` ([2, num_blocks, block_size, Hkv, D]); ``kv_cache`` only gives
  the geometry (InfiniOps' kernels read nothing else from it, and its tests pass one tensor as
  both), so it must match ``kv_cache_out``'s shape and dtype. Slots of -1 are skipped.
- ``rotary_embedding(..., pre_gathered=True)``: ``cos_sin_cache`` is ``[2 * T, head_size]``, rows
  ``0..T-1`` the cos of each token expanded to the whole head (neox: halves repeated, GPT-J: each
  value twice), rows ``T..2T-1`` the sin; ``positions`` is not read. It runs tileops'
  ``apply_rotary_pos_emb`` on the two halves (views); ``rotary_dim`` must equal ``head_size``, as
  on every InfiniOps backend with this path.
- ``linear(a, b, bias, trans_a, trans_b, out)``: ``out = op(a) @ op(b) + bias`` with batch dims
  broadcast (``op`` transposes the last two dims when its flag is set). A 2-D ``op(b)`` runs
  tileops' ``linear`` with ``op(b)``'s transpose as the weight, bias fused. Batched weights
  without a bias run one tileops ``matmul``; batched weights with a bias run tileops ``linear``
  once per weight matrix, so the bias stays fused (no extra pass over ``out``) at the cost of one
  call per batch entry. The ``(input, weight, bias, out)`` overload is ``trans_b=True``.
- ``gemm``: InfiniOps' defaults, ``alpha=1`` and ``beta=1`` (tileops' own ``beta`` defaults to 0).
- ``mha_varlen_fwd(..., generator, num_splits)`` / ``mha_fwd_kvcache(..., num_splits)``:
  ``num_splits`` is a scheduling hint (flash-attn's; below 1: choose); any integer gives the
  same result here.
- ``top_k_top_p_sampler`` / ``topk_topp_sampling`` take no seed in InfiniOps; each call draws its
  seed from torch's default generator (torch tensors) or numpy's global one (numpy arrays), so
  ``torch.manual_seed`` makes runs reproducible and calls differ.
- Classes: the constructor takes the call's arguments (checked for arity and overload) and an
  optional keyword-only ``implementation_index``; ``__call__`` runs the operator on the new
  arguments (tileops caches the prepared instance per geometry itself). ``clear_cache()`` empties
  tileops' one operator cache (every operator's instances). ``active_implementation_indices``
  takes InfiniOps' device names: ``"cpu"``, ``"cuda"``/``"nvidia"``; the other InfiniOps
  platforms (``"ascend"``/``"npu"``, ``"cambricon"``/``"mlu"``, ...) have none here.

Errors: InfiniOps' contracts name no error types (its checks are asserts), so tileops' own pass
through: ValueError (bad argument), TypeError (bad dtype, or arguments that fit no InfiniOps form),
NotImplementedError.
"""

import ast
import itertools
import numbers

from tileops import ops as _ops

_REQUIRED = object()


class _Form:
    """One InfiniOps signature, e.g. ``"input, weight, eps, out"``; ``name=default`` is optional."""

    def __init__(self, text, accepts=None):
        self.text = text
        self.params = []
        for item in (part.strip() for part in text.split(",")):
            name, _, default = item.partition("=")
            self.params.append(
                (name.strip(), ast.literal_eval(default.strip()) if default else _REQUIRED))
        self.accepts = accepts

    def bind(self, op, args, kwargs):
        """The arguments by name, as pybind11 binds them; TypeError when they do not fit."""
        if len(args) > len(self.params):
            raise TypeError(f"{op}(): takes {len(self.params)} arguments, got {len(args)}")
        names = [name for name, _ in self.params]
        unknown = sorted(set(kwargs) - set(names))
        if unknown:
            raise TypeError(f"{op}(): unexpected keyword argument '{unknown[0]}'")
        bound = dict(zip(names, args))
        for name, default in self.params[len(args):]:
            if name in kwargs:
                bound[name] = kwargs[name]
            elif default is _REQUIRED:
                raise TypeError(f"{op}(): missing argument '{name}'")
            else:
                bound[name] = default
        twice = sorted(set(names[:len(args)]) & set(kwargs))
        if twice:
            raise TypeError(f"{op}(): argument '{twice[0]}' given by position and by keyword")
        if self.accepts is not None and not self.accepts(bound):
            raise TypeError(f"{op}(): the arguments do not fit ({self.text})")
        return bound


def _bind(op, forms, args, kwargs):
    """(form index, bound arguments) of the first form that fits, in InfiniOps' overload order."""
    errors = []
    for index, form in enumerate(forms):
        try:
            return index, form.bind(op, args, kwargs)
        except TypeError as error:
            errors.append(str(error))
    if len(forms) == 1:
        raise TypeError(errors[0])
    listed = "; ".join(f"{op}({form.text})" for form in forms)
    raise TypeError(f"{op}(): the arguments fit none of InfiniOps' forms: {listed}")


def _is_number(x):
    """A Python or numpy scalar (numpy.bool_ is no numbers.Number but binds as a bool)."""
    return isinstance(x, numbers.Number) or type(x).__name__ == "bool_"


def _is_tensor(x):
    return not _is_number(x) and hasattr(x, "shape") and hasattr(x, "dtype")


def _stream(stream):
    """InfiniOps' null stream (0) is tileops' None; any other stream is tileops' to refuse."""
    if stream is None or (isinstance(stream, numbers.Integral) and stream == 0):
        return None
    return stream


def _t(x):
    """The last two dims of x swapped (a view, torch or numpy)."""
    return x.swapaxes(-2, -1)


# ---- the operators: each maps one bound InfiniOps call onto tileops.ops -----------------------


def _add(a, run):
    run(_ops.add, a["input"], a["other"], a["out"])


def _mul(a, run):
    run(_ops.mul, a["input"], a["other"], a["out"])


def _cast(a, run):
    run(_ops.cast, a["input"], a["out"])


def _cat(a, run):
    run(_ops.cat, [a["first_input"], *a["rest_inputs"]], a["dim"], a["out"])


def _matmul(a, run):
    run(_ops.matmul, a["a"], a["b"], a["c"], bool(a["trans_a"]), bool(a["trans_b"]))


def _gemm(a, run):
    alpha = 1.0 if a.get("alpha") is None else a["alpha"]
    beta = 1.0 if a.get("beta") is None else a["beta"]
    run(_ops.gemm, a["a"], a["b"], alpha, beta, bool(a.get("trans_a") or False),
        bool(a.get("trans_b") or False), a["c"])


def _batch_index(x, batch, index):
    """x's matrix at the broadcast batch position `index` of `batch` (a view)."""
    dims = x.shape[:-2]
    start = len(batch) - len(dims)
    return x[tuple(0 if size == 1 else i for size, i in zip(dims, index[start:]))]


def _linear(a, run):
    if "input" in a:  # (input, weight, bias, out): F.linear, weight [..., N, K].
        a = {"a": a["input"], "b": a["weight"], "bias": a["bias"], "trans_a": False,
             "trans_b": True, "out": a["out"]}
    x = _t(a["a"]) if a["trans_a"] else a["a"]
    # tileops' linear takes the weight as [N, K]: op(b)'s transpose, a view either way.
    weight = a["b"] if a["trans_b"] else _t(a["b"])
    out, bias = a["out"], a["bias"]
    if len(weight.shape) == 2:
        run(_ops.linear, x, weight, bias, out)
        return
    if bias is None:
        run(_ops.matmul, a["a"], a["b"], out, bool(a["trans_a"]), bool(a["trans_b"]))
        return
    # Batched weights with a bias: one fused linear per matrix, no extra pass over out.
    if len(out.shape) < max(len(x.shape), len(weight.shape)):
        raise ValueError(f"linear: argument 'out': expected the batch dims of a and b, got shape "
                         f"{tuple(out.shape)}")
    batch = tuple(out.shape[:-2])
    for index in itertools.product(*(range(n) for n in batch)):
        xi = x if len(x.shape) == 2 else _batch_index(x, batch, index)
        run(_ops.linear, xi, _batch_index(weight, batch, index), bias, out[index])


def _rms_norm(a, run):
    run(_ops.rms_norm, a["input"], a["weight"], a.get("eps", 1e-6), a["out"])


def _add_rms_norm(a, run):
    run(_ops.add_rms_norm, a["input"], a["residual"], a["weight"], a["eps"], a.get("out"),
        a.get("residual_out"))


def _swiglu(a, run):
    run(_ops.swiglu, a["input"], a["gate"], a["out"])


def _silu_and_mul(a, run):
    run(_ops.silu_and_mul, a["input"], a.get("dim", -1), a["out"])


def _causal_softmax(a, run):
    run(_ops.causal_softmax, a["input"], a["out"])


def _scaled_softmax(a, run):
    run(_ops.scaled_softmax, a["input"], a["scale"], a["out"])


def _embedding(a, run):
    run(_ops.embedding, a["input_ids"], a["weight"], a["out"])


def _rotary_embedding(a, run):
    query, key, cache = a["query"], a["key"], a["cos_sin_cache"]
    if not a["pre_gathered"]:
        run(_ops.rotary_embedding, a["positions"], query, key, a["head_size"], cache,
            a["is_neox_style"], a["rotary_dim"], a["query_out"], a["key_out"])
        return
    if not _is_tensor(query) or not _is_tensor(cache):
        raise TypeError("rotary_embedding: arguments 'query' and 'cos_sin_cache': expected tensors")
    tokens = query.shape[0]
    if a["rotary_dim"] != a["head_size"]:
        raise ValueError(f"rotary_embedding: argument 'rotary_dim': expected head_size "
                         f"{a['head_size']} with pre_gathered, got {a['rotary_dim']}")
    if len(cache.shape) != 2 or cache.shape[0] != 2 * tokens:
        raise ValueError(f"rotary_embedding: argument 'cos_sin_cache': expected [2 * T, "
                         f"head_size] = [{2 * tokens}, {a['head_size']}] with pre_gathered, got "
                         f"shape {tuple(cache.shape)}")
    run(_ops.apply_rotary_pos_emb, query, key, cache[:tokens], cache[tokens:], a["head_size"],
        a["is_neox_style"], a["query_out"], a["key_out"])


def _apply_rotary_pos_emb(a, run):
    run(_ops.apply_rotary_pos_emb, a["query"], a["key"], a["cos"], a["sin"], a["head_size"],
        a["is_neox_style"], a["query_out"], a["key_out"])


def _reshape_and_cache(a, run):
    cache, cache_out = a["kv_cache"], a["kv_cache_out"]
    if _is_tensor(cache) and _is_tensor(cache_out):
        if tuple(cache.shape) != tuple(cache_out.shape):
            raise ValueError(f"reshape_and_cache: argument 'kv_cache': expected the shape of "
                             f"kv_cache_out {tuple(cache_out.shape)}, got {tuple(cache.shape)}")
        if cache.dtype != cache_out.dtype:
            raise TypeError(f"reshape_and_cache: argument 'kv_cache': expected the dtype of "
                            f"kv_cache_out {cache_out.dtype}, got {cache.dtype}")
    run(_ops.reshape_and_cache, a["key"], a["value"], cache_out, a["slot_mapping"])


def _flash_attention(a, run):
    run(_ops.flash_attention, a["query"], a["key"], a["value"], a["cu_seqlens_q"],
        a["cu_seqlens_kv"], a["block_table"], a["num_heads"], a["num_kv_heads"],
        a["head_size"], a["scale"], a["causal"], a["window_left"], a["window_right"],
        a["block_size"], sliding_window=a["sliding_window"], output=a["output"])


def _paged_attention(a, run):
    run(_ops.paged_attention, a["query"], a["key_cache"], a["value_cache"], a["seq_lens"],
        a["block_table"], a["num_heads"], a["num_kv_heads"], a["head_size"], a["scale"],
        a["block_size"], a["output"], a["seq_lens_host"], a["block_table_host"])


def _check_num_splits(op, num_splits):
    if not isinstance(num_splits, numbers.Integral):
        raise TypeError(f"{op}: argument 'num_splits': expected an integer, got "
                        f"{type(num_splits).__name__}")


def _mha_varlen_fwd(a, run):
    _check_num_splits("mha_varlen_fwd", a["num_splits"])
    run(_ops.mha_varlen_fwd, a["q"], a["k"], a["v"], a["out"], a["cu_seqlens_q"],
        a["cu_seqlens_k"], a["seqused_k"], a["leftpad_k"], a["block_table"], a["alibi_slopes"],
        a["max_seqlen_q"], a["max_seqlen_k"], a["p_dropout"], a["softmax_scale"],
        a["zero_tensors"], a["is_causal"], a["window_size_left"], a["window_size_right"],
        a["softcap"], a["return_softmax"], a["generator"])


def _mha_fwd_kvcache(a, run):
    _check_num_splits("mha_fwd_kvcache", a["num_splits"])
    run(_ops.mha_fwd_kvcache, a["q"], a["kcache"], a["vcache"], a["k"], a["v"], a["seqlens_k"],
        a["rotary_cos"], a["rotary_sin"], a["cache_batch_idx"], a["leftpad_k"],
        a["block_table"], a["alibi_slopes"], a["out"], a["softmax_scale"], a["is_causal"],
        a["window_size_left"], a["window_size_right"], a["softcap"], a["is_rotary_interleaved"],
        a["num_splits"])


def _seed_source(x):
    """A fresh seed per call from the caller's global RNG (InfiniOps' samplers take no seed)."""
    if type(x).__module__.startswith("torch"):
        import torch

        return {"generator": torch.default_generator}
    import numpy

    return {"seed": int(numpy.random.randint(0, 2**62, dtype=numpy.int64))}


def _top_k_top_p_sampler(a, run):
    run(_ops.top_k_top_p_sampler, a["logits"], a["k"], a["p"], a["out"],
        **_seed_source(a["logits"]))


def _topk_topp_sampling(a, run):
    run(_ops.topk_topp_sampling, a["probs"], a["topk"], a["topp"], a["out"],
        **_seed_source(a["probs"]))


# ---- the table: InfiniOps' name, class, forms in its overload order, tileops' operator ---------


def _fits_rms_norm_eps(a):
    return _is_number(a["eps"])


def _fits_gemm_full(a):
    return _is_tensor(a["c"]) and all(a[n] is None or _is_number(a[n])
                                      for n in ("alpha", "beta", "trans_a", "trans_b"))


def _fits_gemm_scaled(a):
    return _is_tensor(a["c"]) and all(a[n] is None or _is_number(a[n]) for n in ("alpha", "beta"))


def _fits_linear_flags(a):
    return _is_number(a["trans_a"]) and _is_number(a["trans_b"]) and _is_tensor(a["out"])


def _fits_silu_dim(a):
    return isinstance(a["dim"], numbers.Integral)


_ROTARY = ("positions, query, key=None, head_size, cos_sin_cache, is_neox_style, rotary_dim, "
           "query_out=None, key_out=None, pre_gathered=False")
_FLASH = ("query, key, value, cu_seqlens_q=None, cu_seqlens_kv=None, block_table=None, "
          "num_heads, num_kv_heads, head_size, scale, causal, window_left, window_right, "
          "block_size, output, sliding_window=None")
_PAGED = ("query, key_cache, value_cache, seq_lens, block_table, num_heads, num_kv_heads, "
          "head_size, scale, block_size, output, seq_lens_host=None, block_table_host=None")
_VARLEN = ("q, k, v, out, cu_seqlens_q, cu_seqlens_k, seqused_k=None, leftpad_k=None, "
           "block_table=None, alibi_slopes=None, max_seqlen_q, max_seqlen_k, p_dropout, "
           "softmax_scale, zero_tensors, is_causal, window_size_left, window_size_right, "
           "softcap, return_softmax, generator=None, num_splits=0")
_KVCACHE = ("q, kcache, vcache, k=None, v=None, seqlens_k=None, rotary_cos=None, "
            "rotary_sin=None, cache_batch_idx=None, leftpad_k=None, block_table=None, "
            "alibi_slopes=None, out, softmax_scale, is_causal, window_size_left, "
            "window_size_right, softcap, is_rotary_interleaved, num_splits=0")

_OPERATORS = [
    ("add", "Add", [_Form("input, other, out")], _add, "add"),
    ("mul", "Mul", [_Form("input, other, out")], _mul, "mul"),
    ("cast", "Cast", [_Form("input, out")], _cast, "cast"),
    ("cat", "Cat", [_Form("first_input, rest_inputs, dim, out")], _cat, "cat"),
    ("matmul", "Matmul", [_Form("a, b, c, trans_a, trans_b")], _matmul, "matmul"),
    ("gemm", "Gemm",
     [_Form("a, b, alpha=None, beta=None, trans_a=None, trans_b=None, c", _fits_gemm_full),
      _Form("a, b, c"),
      _Form("a, b, alpha=None, beta=None, c", _fits_gemm_scaled)], _gemm, "gemm"),
    ("linear", "Linear",
     [_Form("a, b, bias=None, trans_a, trans_b, out", _fits_linear_flags),
      _Form("input, weight, bias=None, out")], _linear, "linear"),
    ("rms_norm", "RmsNorm",
     [_Form("input, weight, eps, out", _fits_rms_norm_eps), _Form("input, weight, out")],
     _rms_norm, "rms_norm"),
    ("add_rms_norm", "AddRmsNorm",
     [_Form("input, residual, weight, eps, out, residual_out"),
      _Form("input, residual, weight, eps")], _add_rms_norm, "add_rms_norm"),
    ("swiglu", "Swiglu", [_Form("input, gate, out")], _swiglu, "swiglu"),
    ("silu_and_mul", "SiluAndMul",
     [_Form("input, dim, out", _fits_silu_dim), _Form("input, out")], _silu_and_mul,
     "silu_and_mul"),
    ("causal_softmax", "CausalSoftmax", [_Form("input, out")], _causal_softmax,
     "causal_softmax"),
    ("scaled_softmax", "ScaledSoftmax", [_Form("input, scale, out")], _scaled_softmax,
     "scaled_softmax"),
    ("embedding", "Embedding", [_Form("input_ids, weight, out")], _embedding, "embedding"),
    ("rotary_embedding", "RotaryEmbedding", [_Form(_ROTARY)], _rotary_embedding,
     "rotary_embedding"),
    ("apply_rotary_pos_emb", "ApplyRotaryPosEmb",
     [_Form("query, key, cos, sin, head_size, is_neox_style, query_out, key_out")],
     _apply_rotary_pos_emb, "apply_rotary_pos_emb"),
    ("reshape_and_cache", "ReshapeAndCache",
     [_Form("key, value, kv_cache, slot_mapping, kv_cache_out")], _reshape_and_cache,
     "reshape_and_cache"),
    ("flash_attention", "FlashAttention", [_Form(_FLASH)], _flash_attention, "flash_attention"),
    ("paged_attention", "PagedAttention", [_Form(_PAGED)], _paged_attention, "paged_attention"),
    ("mha_varlen_fwd", "MhaVarlenFwd", [_Form(_VARLEN)], _mha_varlen_fwd, "flash_attention"),
    ("mha_fwd_kvcache", "MhaFwdKvcache", [_Form(_KVCACHE)], _mha_fwd_kvcache,
     "flash_attention"),
    ("top_k_top_p_sampler", "TopKTopPSampler", [_Form("logits, k=None, p=None, out")],
     _top_k_top_p_sampler, "top_k_top_p_sampler"),
    ("topk_topp_sampling", "TopkToppSampling", [_Form("probs, topk, topp, out")],
     _topk_topp_sampling, "topk_topp_sampling"),
]

# InfiniOps' device names: its platforms and their torch device types.
_CUDA_DEVICES = {"cuda", "nvidia"}
_OTHER_DEVICES = {"ascend", "npu", "cambricon", "mlu", "moore", "musa", "metax", "iluvatar",
                  "kunlun", "hygon", "qy"}


def _device(device):
    name = getattr(device, "type", device)  # a torch.device names its type
    if not isinstance(name, str):
        raise TypeError(f"active_implementation_indices: argument 'device': expected a device "
                        f"name such as 'cpu', got {type(device).__name__}")
    name = name.partition(":")[0]
    if name == "cpu" or name in _CUDA_DEVICES:
        return "cpu" if name == "cpu" else "cuda"
    if name in _OTHER_DEVICES:
        return None
    known = ", ".join(sorted({"cpu"} | _CUDA_DEVICES | _OTHER_DEVICES))
    raise ValueError(f"active_implementation_indices: argument 'device': expected one of "
                     f"{known}, got '{device}'")


class _Operator:
    """InfiniOps' class form: constructed with a call's arguments, called with new ones."""

    _name = ""
    _forms = ()
    _tileops_op = ""

    def __init__(self, *args, implementation_index=0, **kwargs):
        _bind(self._name, self._forms, args, kwargs)
        self._implementation_index = implementation_index

    def __call__(self, *args, stream=0, **kwargs):
        return globals()[self._name](*args, stream=stream,
                                     implementation_index=self._implementation_index, **kwargs)

    @classmethod
    def active_implementation_indices(cls, device):
        """Implementation indices on `device` ('cpu', 'cuda', ...), ascending."""
        name = _device(device)
        if name is None:
            return []
        return list(_ops.active_implementation_indices(cls._tileops_op, name))

    @classmethod
    def clear_cache(cls):
        """Empties tileops' operator-instance cache (one cache for every operator)."""
        _ops.clear_cache()


def _make(name, class_name, forms, impl, tileops_op):
    def run_with(stream, implementation_index):
        def run(function, *args, **kwargs):
            return function(*args, **kwargs, implementation_index=implementation_index,
                            stream=stream)

        return run

    def operator(*args, stream=0, implementation_index=0, **kwargs):
        _, bound = _bind(name, forms, args, kwargs)
        impl(bound, run_with(_stream(stream), implementation_index))

    signatures = "\n".join(f"{name}({form.text}, *, stream=0, implementation_index=0)"
                           for form in forms)
    operator.__name__ = operator.__qualname__ = name
    operator.__doc__ = (f"{signatures}\n\nInfiniOps' {name} over tileops.ops.{tileops_op}; "
                        "writes the outputs given and returns None.")
    operator.__module__ = __name__
    cls = type(class_name, (_Operator,), {
        "_name": name, "_forms": tuple(forms), "_tileops_op": tileops_op,
        "__doc__": f"InfiniOps' {class_name}: {class_name}(args) then instance(args); "
                   f"args as in {name}().",
        "__module__": __name__})
    return operator, cls


__all__ = []
for _entry in _OPERATORS:
    _function, _class = _make(*_entry)
    globals()[_entry[0]] = _function
    globals()[_entry[1]] = _class
    __all__ += [_entry[0], _entry[1]]
del _entry, _function, _class
