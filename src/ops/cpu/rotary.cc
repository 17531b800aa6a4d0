#include "src/ops/cpu/rotary.h"

#include <algorithm>
#include <span>

#include "src/ops/cpu/row_offsets.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/simd/rotary_kernels.h"
#include "src/ops/cpu/strided_copy.h"
#include "src/ops/framework/workspace_bytes.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/runtime/workspace_pool.h"

namespace tileops::ops::cpu {

TokenOffsets::TokenOffsets(const Dims& shape, const Dims& strides, int rank) {
  // Innermost first, then reversed: a dim whose stride spans the merged inner ones joins them.
  Dims extents, steps;
  for (int i = rank - 1; i >= 0; --i) {
    if (shape[i] == 1) continue;
    const int last = extents.size() - 1;
    if (last >= 0 && strides[i] == steps[last] * extents[last]) {
      extents[last] *= shape[i];
    } else {
      extents.push_back(shape[i]);
      steps.push_back(strides[i]);
    }
  }
  for (int i = extents.size() - 1; i >= 0; --i) {
    shape_.push_back(extents[i]);
    strides_.push_back(steps[i]);
  }
}

HeadRows HeadRows::of(const TensorDesc& t, std::int64_t head_size, int token_rank) {
  if (!t.present) return {};
  const TokenOffsets token(t.shape, t.strides, token_rank);
  if (t.shape.size() == token_rank + 2) {
    return {t.shape[token_rank], token, t.strides[token_rank], t.strides[token_rank + 1]};
  }
  // [*tokens, H·head_size]: head h starts h·head_size elements into the row.
  return {t.shape[token_rank] / head_size, token, head_size * t.strides[token_rank],
          t.strides[token_rank]};
}

RotaryPlan::RotaryPlan(const TensorDesc& query, const TensorDesc& key, const TensorDesc& query_out,
                       const TensorDesc& key_out, std::int64_t head_size, std::int64_t rot_dim,
                       bool neox, int token_rank)
    : tokens_(Dims(std::span(query.shape.begin(), query.shape.begin() + token_rank)).product()),
      head_size_(head_size),
      rot_dim_(rot_dim),
      neox_(neox),
      has_key_(key.present),
      query_(HeadRows::of(query, head_size, token_rank)),
      key_(HeadRows::of(key, head_size, token_rank)),
      query_out_(HeadRows::of(query_out, head_size, token_rank)),
      key_out_(HeadRows::of(key_out, head_size, token_rank)) {}

void RotaryPlan::rotate_heads(const Tensor& in, const HeadRows& in_rows, const Tensor& out,
                              const HeadRows& out_rows, std::int64_t t, const float* c,
                              const float* s, float* x) const {
  const DataType dtype = in.dtype();
  // The contract allows an output only as exactly its input's view or apart from it.
  const bool in_place = in.data() == out.data();
  const bool direct = dtype == DataType::kFloat32 && in_rows.element == 1 && out_rows.element == 1;
  const auto rotate = neox_ ? rotate_halves : rotate_pairs;
  const std::int64_t in_token = in_rows.token(t);
  const std::int64_t out_token = out_rows.token(t);
  for (std::int64_t h = 0; h < in_rows.heads; ++h) {
    char* src = element_at(in, in_token + h * in_rows.head);
    char* dst = element_at(out, out_token + h * out_rows.head);
    if (direct) {
      rotate(reinterpret_cast<const float*>(src), c, s, rot_dim_, reinterpret_cast<float*>(dst));
    } else {
      load_f32(src, dtype, in_rows.element, rot_dim_, x);
      rotate(x, c, s, rot_dim_, x);
      store_f32(x, dst, dtype, out_rows.element, rot_dim_);
    }
    if (!in_place && rot_dim_ < head_size_) {
      const auto bytes = static_cast<std::int64_t>(in.element_size());
      copy_elements(src + rot_dim_ * in_rows.element * bytes, in_rows.element,
                    dst + rot_dim_ * out_rows.element * bytes, out_rows.element,
                    head_size_ - rot_dim_, in.element_size());
    }
  }
}

void RotaryPlan::run(const Tensor& query, const Tensor& key, const Tensor& query_out,
                     const Tensor& key_out, RotaryTables tables, const Context& ctx) const {
  if (tokens_ == 0) return;
  ThreadPool& pool = ctx.threads();
  // Per chunk: the c and s tables, a table scratch row and a float32 head row.
  const std::int64_t per_chunk = 3 * rot_dim_ + head_size_;
  WorkspacePool::Lease lease = ctx.workspace().acquire(
      kCpu, ctx.stream, 0,
      workspace_bytes({{3, rot_dim_, pool.num_threads()}, {head_size_, pool.num_threads()}},
                      sizeof(float), "rotary: argument 'query': its workspace"));
  float* scratch = lease.as<float>();
  const std::int64_t work_per_token =
      std::max<std::int64_t>(1, (query_.heads + (has_key_ ? key_.heads : 0)) * rot_dim_);
  pool.parallel_range(tokens_, std::max<std::int64_t>(1, 16384 / work_per_token),
                      [&](int chunk, std::int64_t begin, std::int64_t end) {
                        float* c = scratch + chunk * per_chunk;
                        float* s = c + rot_dim_;
                        float* tmp = s + rot_dim_;
                        float* x = tmp + rot_dim_;
                        for (std::int64_t t = begin; t < end; ++t) {
                          tables(t, c, s, tmp);
                          rotate_heads(query, query_, query_out, query_out_, t, c, s, x);
                          if (has_key_) rotate_heads(key, key_, key_out, key_out_, t, c, s, x);
                        }
                      });
}

void expand_frequency_tables(const float* cos_half, const float* sin_half, std::int64_t rot_dim,
                             bool neox, float* c, float* s) {
  const std::int64_t half = rot_dim / 2;
  for (std::int64_t i = 0; i < half; ++i) {
    const std::int64_t first = neox ? i : 2 * i;
    const std::int64_t second = neox ? i + half : 2 * i + 1;
    c[first] = cos_half[i];
    c[second] = cos_half[i];
    s[first] = -sin_half[i];
    s[second] = sin_half[i];
  }
}

void sign_element_tables(std::int64_t rot_dim, bool neox, float* s) {
  if (neox) {
    for (std::int64_t i = 0; i < rot_dim / 2; ++i) s[i] = -s[i];
  } else {
    for (std::int64_t i = 0; i < rot_dim; i += 2) s[i] = -s[i];
  }
}

}  // namespace tileops::ops::cpu
