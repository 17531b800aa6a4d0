// gated_delta_rule on CPU: one work item per (sequence, value head), claimed by the threads, each
// with its float32 state [K, V] in the final_state block itself when that block is contiguous
// (decode then touches the state once per token pass), else in per-thread scratch. Two forms:
//  - recurrent: per token two passes over S (delta_decay_and_project: S *= exp(g), kv = Sᵀk;
//    delta_update_and_project: S += k ⊗ delta, o = Sᵀq), vectorised along V;
//  - chunked (64 tokens): with S0 the state at the chunk's start, gc the in-chunk cumulative g,
//    delta = (I + A)⁻¹ (beta (v - exp(gc) K S0)), A[i][j<i] = beta_i exp(gc_i - gc_j) k_i·k_j (the
//    WY form's u - w S0, solved by forward substitution), o = exp(gc) Q S0 + (P ∘ QKᵀ) delta with
//    P[i][j<=i] = exp(gc_i - gc_j), and S = exp(gc_L) S0 + (exp(gc_L - gc) K)ᵀ delta: small
//    matrix products (delta_matmul) instead of per-token passes.
// Each chunk (each token in the recurrent form) reads its q/k/v/g/beta before writing its o, so
// o may be v itself, and final_state may be initial_state.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "src/ops/contracts/gated_delta_rule.decl.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/row_offsets.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/simd/delta_rule_kernels.h"
#include "src/ops/cpu/simd/norm_kernels.h"
#include "src/ops/framework/attention_layout.h"
#include "src/ops/framework/workspace_bytes.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/runtime/workspace_pool.h"

namespace tileops::ops::cpu {
namespace {

constexpr const OpDecl& kDecl = decls::gated_delta_rule;
constexpr int kQ = tensor_index(kDecl, "q");
constexpr int kK = tensor_index(kDecl, "k");
constexpr int kV = tensor_index(kDecl, "v");
constexpr int kG = tensor_index(kDecl, "g");
constexpr int kBeta = tensor_index(kDecl, "beta");
constexpr int kInitial = tensor_index(kDecl, "initial_state");
constexpr int kCuSeqlens = tensor_index(kDecl, "cu_seqlens");
constexpr int kO = tensor_index(kDecl, "o");
constexpr int kFinal = tensor_index(kDecl, "final_state");
constexpr int kScale = attribute_index(kDecl, "scale");
constexpr int kL2norm = attribute_index(kDecl, "use_qk_l2norm_in_kernel");
constexpr int kChunkSize = attribute_index(kDecl, "chunk_size");
constexpr float kL2normEps = 1e-6f;  // fla's l2norm: x / sqrt(sum x^2 + 1e-6)

// Address of element [i0, i1, i2] of a rank-3 tensor, or [i0, i1, i2, 0] of a rank-4 one.
const char* at(const Tensor& t, std::int64_t i0, std::int64_t i1, std::int64_t i2) {
  return element_at(t, i0 * t.stride(0) + i1 * t.stride(1) + i2 * t.stride(2));
}
char* at_mut(const Tensor& t, std::int64_t i0, std::int64_t i1, std::int64_t i2) {
  return element_at(t, i0 * t.stride(0) + i1 * t.stride(1) + i2 * t.stride(2));
}

class GatedDeltaRuleCpu final : public Operator {
 public:
  explicit GatedDeltaRuleCpu(const Problem& p)
      : heads_(p.tensors[kQ].shape[2]),
        value_heads_(p.tensors[kV].shape[2]),
        dk_(p.tensors[kQ].shape[3]),
        dv_(p.tensors[kV].shape[3]),
        scale_(static_cast<float>(p.attributes[kScale])),
        l2norm_(p.attributes[kL2norm] != 0.0),
        chunk_(static_cast<std::int64_t>(p.attributes[kChunkSize])) {}

  void run(std::span<const Tensor> t, const Context& ctx) const override {
    const bool varlen = t[kCuSeqlens].data() != nullptr || t[kCuSeqlens].rank() != 0;
    const std::int64_t sequences = varlen ? t[kCuSeqlens].size(0) - 1 : t[kQ].size(0);
    const std::int64_t items = sequences * value_heads_;
    if (items == 0) return;
    ThreadPool& pool = ctx.threads();
    const std::int64_t c = std::max<std::int64_t>(chunk_, 1);
    // Per thread: the state, Q, K, Kᵀ [c, K] each, V, K S0, Q S0 [c, V] each, A and QKᵀ [c, c],
    // and c-long g, beta, decays; rounded up to whole cache lines.
    constexpr std::string_view kWhat = "gated_delta_rule: argument 'q': its workspace";
    const std::size_t per_thread =
        (workspace_bytes({{dk_, dv_}, {3, c, dk_}, {3, c, dv_}, {2, c, c}, {4, c}, {2, dk_}},
                         sizeof(float), kWhat) +
         63) /
        64 * 64;
    WorkspacePool::Lease lease = ctx.workspace().acquire(
        kCpu, ctx.stream, 0,
        workspace_bytes({{static_cast<std::int64_t>(per_thread), pool.num_threads()}}, 1, kWhat));
    pool.parallel_claim(items, [&](int thread, std::int64_t item) {
      float* scratch = reinterpret_cast<float*>(lease.as<char>() +
                                                per_thread * static_cast<std::size_t>(thread));
      const std::int64_t n = item / value_heads_, hv = item % value_heads_;
      const std::int64_t batch = varlen ? 0 : n;
      const std::int64_t bos = varlen ? index_at(t[kCuSeqlens], n) : 0;
      const std::int64_t eos = varlen ? index_at(t[kCuSeqlens], n + 1) : t[kQ].size(1);
      run_item(t, n, hv, batch, bos, eos, scratch);
    });
  }

 private:
  struct Item {
    std::int64_t batch, head, value_head;
  };

  void run_item(std::span<const Tensor> t, std::int64_t n, std::int64_t hv, std::int64_t batch,
                std::int64_t bos, std::int64_t eos, float* scratch) const {
    const Tensor& final_state = t[kFinal];
    const Tensor& initial = t[kInitial];
    const bool in_place = final_state.stride(3) == 1 && final_state.stride(2) == dv_;
    float* s = in_place ? reinterpret_cast<float*>(at_mut(final_state, n, hv, 0)) : scratch;
    float* work = scratch + dk_ * dv_;
    // S0: initial_state's block (any strides), or zero.
    if (initial.data() != nullptr) {
      for (std::int64_t r = 0; r < dk_; ++r) {
        const float* src = reinterpret_cast<const float*>(at(initial, n, hv, r));
        if (initial.stride(3) == 1) {
          if (src != s + r * dv_) std::memmove(s + r * dv_, src, sizeof(float) * dv_);
        } else {
          load_f32(src, DataType::kFloat32, initial.stride(3), dv_, s + r * dv_);
        }
      }
    } else {
      std::fill(s, s + dk_ * dv_, 0.0f);
    }
    const Item it{batch, hv / (value_heads_ / heads_), hv};
    if (chunk_ == 0) {
      recurrent(t, it, bos, eos, s, work);
    } else {
      for (std::int64_t c0 = bos; c0 < eos; c0 += chunk_) {
        chunk(t, it, c0, std::min(eos - c0, chunk_), s, work);
      }
    }
    if (!in_place) {
      for (std::int64_t r = 0; r < dk_; ++r) {
        store_f32(s + r * dv_, at_mut(final_state, n, hv, r), DataType::kFloat32,
                  final_state.stride(3), dv_);
      }
    }
  }

  // q (scaled) and k of token `tok` as float32, l2-normalised on request.
  void load_qk(std::span<const Tensor> t, const Item& it, std::int64_t tok, float* q,
               float* k) const {
    load_f32(at(t[kQ], it.batch, tok, it.head), t[kQ].dtype(), t[kQ].stride(3), dk_, q);
    load_f32(at(t[kK], it.batch, tok, it.head), t[kK].dtype(), t[kK].stride(3), dk_, k);
    float qs = scale_, ks = 1.0f;
    if (l2norm_) {
      qs /= std::sqrt(sum_of_squares(q, dk_) + kL2normEps);
      ks /= std::sqrt(sum_of_squares(k, dk_) + kL2normEps);
    }
    for (std::int64_t i = 0; i < dk_; ++i) q[i] *= qs, k[i] *= ks;
  }

  // `count` float32 values of a [B, T, HV] gate from token `tok` on.
  static void load_gate(const Tensor& g, const Item& it, std::int64_t tok, std::int64_t count,
                        float* out) {
    load_f32(at(g, it.batch, tok, it.value_head), g.dtype(), g.stride(1), count, out);
  }

  void recurrent(std::span<const Tensor> t, const Item& it, std::int64_t bos, std::int64_t eos,
                 float* s, float* work) const {
    float* q = work;
    float* k = q + dk_;
    float* v = k + dk_;
    float* kv = v + dv_;
    const Tensor& o = t[kO];
    for (std::int64_t tok = bos; tok < eos; ++tok) {
      load_qk(t, it, tok, q, k);
      load_f32(at(t[kV], it.batch, tok, it.value_head), t[kV].dtype(), t[kV].stride(3), dv_, v);
      float g = 0.0f, beta = 0.0f;
      load_gate(t[kG], it, tok, 1, &g);
      load_gate(t[kBeta], it, tok, 1, &beta);
      delta_decay_and_project(s, dk_, dv_, std::exp(g), k, kv);
      for (std::int64_t j = 0; j < dv_; ++j) v[j] = beta * (v[j] - kv[j]);
      delta_update_and_project(s, dk_, dv_, k, v, q, kv);
      store_f32(kv, at_mut(o, it.batch, tok, it.value_head), o.dtype(), o.stride(3), dv_);
    }
  }

  void chunk(std::span<const Tensor> t, const Item& it, std::int64_t c0, std::int64_t len, float* s,
             float* work) const {
    const std::int64_t c = chunk_;
    float* q = work;           // [len, K], scaled (and normalised)
    float* k = q + c * dk_;    // [len, K]
    float* kt = k + c * dk_;   // [K, len]: kᵀ, then (exp(gc_L - gc) k)ᵀ
    float* d = kt + c * dk_;   // [len, V]: v, then delta
    float* ks = d + c * dv_;   // [len, V]: K S0
    float* os = ks + c * dv_;  // [len, V]: Q S0, then o
    float* a = os + c * dv_;   // [len, len]: K Kᵀ, then the solve's coefficients
    float* qk = a + c * c;     // [len, len]: Q Kᵀ, then its decayed causal part
    float* gc = qk + c * c;    // [len]: cumulative g
    float* beta = gc + c;      // [len]
    for (std::int64_t i = 0; i < len; ++i) {
      load_qk(t, it, c0 + i, q + i * dk_, k + i * dk_);
      load_f32(at(t[kV], it.batch, c0 + i, it.value_head), t[kV].dtype(), t[kV].stride(3), dv_,
               d + i * dv_);
    }
    load_gate(t[kG], it, c0, len, gc);
    load_gate(t[kBeta], it, c0, len, beta);
    for (std::int64_t i = 1; i < len; ++i) gc[i] += gc[i - 1];
    for (std::int64_t i = 0; i < len; ++i) {
      for (std::int64_t r = 0; r < dk_; ++r) kt[r * len + i] = k[i * dk_ + r];
    }
    delta_matmul(k, dk_, len, kt, len, dk_, len, a, len, false);
    delta_matmul(q, dk_, len, kt, len, dk_, len, qk, len, false);
    delta_matmul(k, dk_, len, s, dv_, dk_, dv_, ks, dv_, false);
    delta_matmul(q, dk_, len, s, dv_, dk_, dv_, os, dv_, false);
    // delta_i = beta_i (v_i - exp(gc_i) (K S0)_i) - sum_{j<i} A_ij delta_j, row by row.
    for (std::int64_t i = 0; i < len; ++i) {
      const float e = std::exp(gc[i]);
      float* di = d + i * dv_;
      for (std::int64_t j = 0; j < dv_; ++j) di[j] = beta[i] * (di[j] - e * ks[i * dv_ + j]);
      float* ai = a + i * len;
      for (std::int64_t j = 0; j < i; ++j) ai[j] *= -beta[i] * std::exp(gc[i] - gc[j]);
      if (i > 0) delta_matmul(ai, len, 1, d, dv_, i, dv_, di, dv_, true);
      // o_i = exp(gc_i) (Q S0)_i + sum_{j<=i} exp(gc_i - gc_j) (q_i·k_j) delta_j, after the solve.
      float* qki = qk + i * len;
      for (std::int64_t j = 0; j <= i; ++j) qki[j] *= std::exp(gc[i] - gc[j]);
      for (std::int64_t j = 0; j < dv_; ++j) os[i * dv_ + j] *= e;
    }
    for (std::int64_t i = 0; i < len; ++i) {
      delta_matmul(qk + i * len, len, 1, d, dv_, i + 1, dv_, os + i * dv_, dv_, true);
    }
    // S = exp(gc_L) S0 + (exp(gc_L - gc) K)ᵀ delta.
    const float last = gc[len - 1];
    const float e_last = std::exp(last);
    for (std::int64_t i = 0; i < dk_ * dv_; ++i) s[i] *= e_last;
    for (std::int64_t r = 0; r < dk_; ++r) {
      for (std::int64_t i = 0; i < len; ++i) kt[r * len + i] *= std::exp(last - gc[i]);
    }
    delta_matmul(kt, len, dk_, d, dv_, len, dv_, s, dv_, true);
    const Tensor& o = t[kO];
    for (std::int64_t i = 0; i < len; ++i) {
      store_f32(os + i * dv_, at_mut(o, it.batch, c0 + i, it.value_head), o.dtype(), o.stride(3),
                dv_);
    }
  }

  std::int64_t heads_, value_heads_, dk_, dv_;
  float scale_;
  bool l2norm_;
  std::int64_t chunk_;
};

}  // namespace

void register_gated_delta_rule(std::vector<Implementation>& out) {
  out.push_back({"gated_delta_rule", DeviceType::kCpu, 0, "native",
                 [](const Problem& p) { return std::make_unique<GatedDeltaRuleCpu>(p); }});
}

}  // namespace tileops::ops::cpu
