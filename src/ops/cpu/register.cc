#include "src/ops/cpu/register.h"

#include "src/ops/framework/builtin_implementations.h"

namespace tileops::ops {

void register_cpu_implementations(std::vector<Implementation>& out) {
  cpu::register_activations(out);
  cpu::register_add(out);
  cpu::register_block_copies(out);
  cpu::register_add_rms_norm(out);
  cpu::register_apply_rotary_pos_emb(out);
  cpu::register_cast(out);
  cpu::register_cat(out);
  cpu::register_causal_softmax(out);
  cpu::register_embedding(out);
  cpu::register_flash_attention(out);
  cpu::register_gated_delta_rule(out);
  cpu::register_gemm(out);
  cpu::register_linear(out);
  cpu::register_matmul(out);
  cpu::register_mul(out);
  cpu::register_packed_linear(out);
  cpu::register_paged_attention(out);
  cpu::register_quantized_linear(out);
  cpu::register_reshape_and_cache(out);
  cpu::register_rms_norm(out);
  cpu::register_rotary_embedding(out);
  cpu::register_scaled_mm(out);
  cpu::register_scaled_softmax(out);
  cpu::register_silu_and_mul(out);
  cpu::register_swiglu(out);
  cpu::register_tl_attention(out);
  cpu::register_tl_elementwise(out);
  cpu::register_tl_norms(out);
  cpu::register_tl_softmax(out);
  cpu::register_tl_scaled_mm(out);
  cpu::register_top_k_top_p_mask(out);
  cpu::register_top_k_top_p_sampler(out);
  cpu::register_topk_topp_sampling(out);
}

}  // namespace tileops::ops
