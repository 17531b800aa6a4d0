// One registration function per CPU operator implementation file; register.cc lists them all.
#pragma once

#include <vector>

#include "tileops/ops/registry.h"

namespace tileops::ops::cpu {

void register_activations(std::vector<Implementation>& out);  // gelu_and_mul, gelu_new, ...
void register_add(std::vector<Implementation>& out);
void register_block_copies(std::vector<Implementation>& out);  // swap_blocks, copy_blocks
void register_add_rms_norm(std::vector<Implementation>& out);
void register_apply_rotary_pos_emb(std::vector<Implementation>& out);
void register_cast(std::vector<Implementation>& out);
void register_cat(std::vector<Implementation>& out);
void register_causal_softmax(std::vector<Implementation>& out);
void register_embedding(std::vector<Implementation>& out);
void register_flash_attention(std::vector<Implementation>& out);
void register_gated_delta_rule(std::vector<Implementation>& out);
void register_gemm(std::vector<Implementation>& out);
void register_linear(std::vector<Implementation>& out);
void register_packed_linear(std::vector<Implementation>& out);
void register_matmul(std::vector<Implementation>& out);
void register_mul(std::vector<Implementation>& out);
void register_paged_attention(std::vector<Implementation>& out);
void register_quantized_linear(std::vector<Implementation>& out);
void register_reshape_and_cache(std::vector<Implementation>& out);
void register_rms_norm(std::vector<Implementation>& out);
void register_rotary_embedding(std::vector<Implementation>& out);
void register_scaled_mm(std::vector<Implementation>& out);
void register_scaled_softmax(std::vector<Implementation>& out);
void register_silu_and_mul(std::vector<Implementation>& out);
void register_swiglu(std::vector<Implementation>& out);
// The tile-language implementations (index 1, "tl"; src/ops/cpu/tl/).
void register_tl_attention(std::vector<Implementation>& out);    // flash_attention, paged_attention
void register_tl_elementwise(std::vector<Implementation>& out);  // add, mul, silu_and_mul, swiglu
void register_tl_norms(std::vector<Implementation>& out);        // rms_norm, add_rms_norm
void register_tl_softmax(std::vector<Implementation>& out);      // scaled_softmax, causal_softmax
void register_tl_scaled_mm(std::vector<Implementation>& out);    // scaled_mm
void register_top_k_top_p_mask(std::vector<Implementation>& out);
void register_top_k_top_p_sampler(std::vector<Implementation>& out);
void register_topk_topp_sampling(std::vector<Implementation>& out);

}  // namespace tileops::ops::cpu
