/* The C API entries of rotary_embedding, apply_rotary_pos_emb, reshape_and_cache (both forms)
 * and the two samplers from plain C11: results against references written here, an error per
 * entry (status and the argument named), outputs untouched on failure, NULL context. */
#include <stdint.h>

#include "check.h"

enum { kT = 3, kH = 2, kD = 4, kMaxPos = 8 };

static void test_rotary(void) {
  int64_t pos[kT] = {0, 3, 7};
  float cache[kMaxPos * kD];
  for (int p = 0; p < kMaxPos; ++p) {
    for (int i = 0; i < kD / 2; ++i) {
      const double angle = p * pow(10000.0, -2.0 * i / kD);
      cache[p * kD + i] = (float)cos(angle);
      cache[p * kD + kD / 2 + i] = (float)sin(angle);
    }
  }
  float q[kT * kH * kD];
  float q_out[kT * kH * kD];
  for (int i = 0; i < kT * kH * kD; ++i) q[i] = (float)sin(0.7 * (i + 1));
  const int64_t pos_shape[] = {kT};
  const int64_t cache_shape[] = {kMaxPos, kD};
  const int64_t q_shape[] = {kT, kH * kD};
  const tileops_tensor pt = tensor(pos, TILEOPS_INT64, 1, pos_shape, NULL);
  const tileops_tensor ct = tensor(cache, TILEOPS_FLOAT32, 2, cache_shape, NULL);
  const tileops_tensor qt = tensor(q, TILEOPS_FLOAT32, 2, q_shape, NULL);
  const tileops_tensor qo = tensor(q_out, TILEOPS_FLOAT32, 2, q_shape, NULL);
  poison(q_out, kT * kH * kD);
  CHECK_OK(tileops_rotary_embedding(&pt, &qt, NULL, kD, &ct, 1, 0, &qo, NULL, NULL));
  for (int t = 0; t < kT; ++t) {
    for (int h = 0; h < kH; ++h) {
      for (int i = 0; i < kD / 2; ++i) {
        const float* x = q + (t * kH + h) * kD;
        const float* y = q_out + (t * kH + h) * kD;
        const double c = cache[pos[t] * kD + i], s = cache[pos[t] * kD + kD / 2 + i];
        CHECK(close_to(y[i], x[i] * c - x[i + kD / 2] * s));
        CHECK(close_to(y[i + kD / 2], x[i + kD / 2] * c + x[i] * s));
      }
    }
  }
  /* In place gives the same values; apply_rotary_pos_emb with the gathered rows too. */
  float cos_rows[kT * kD / 2], sin_rows[kT * kD / 2], q2[kT * kH * kD];
  for (int t = 0; t < kT; ++t) {
    for (int i = 0; i < kD / 2; ++i) {
      cos_rows[t * kD / 2 + i] = cache[pos[t] * kD + i];
      sin_rows[t * kD / 2 + i] = cache[pos[t] * kD + kD / 2 + i];
    }
  }
  memcpy(q2, q, sizeof q);
  const int64_t table_shape[] = {kT, kD / 2};
  const tileops_tensor cos_t = tensor(cos_rows, TILEOPS_FLOAT32, 2, table_shape, NULL);
  const tileops_tensor sin_t = tensor(sin_rows, TILEOPS_FLOAT32, 2, table_shape, NULL);
  const tileops_tensor q2t = tensor(q2, TILEOPS_FLOAT32, 2, q_shape, NULL);
  CHECK_OK(tileops_rotary_embedding(&pt, &qt, NULL, kD, &ct, 1, -1, NULL, NULL, NULL));
  CHECK(memcmp(q, q_out, sizeof q) == 0);
  CHECK_OK(tileops_apply_rotary_pos_emb(&q2t, NULL, &cos_t, &sin_t, kD, 1, NULL, NULL, NULL));
  CHECK(memcmp(q2, q_out, sizeof q) == 0);

  /* Errors: a position past the cache, a bad head_size, a NULL query. */
  poison(q_out, kT * kH * kD);
  pos[2] = kMaxPos;
  CHECK_FAILS(tileops_rotary_embedding(&pt, &qt, NULL, kD, &ct, 1, 0, &qo, NULL, NULL),
              TILEOPS_INVALID_ARGUMENT, "positions");
  pos[2] = 1;
  CHECK_FAILS(tileops_rotary_embedding(&pt, &qt, NULL, 3, &ct, 1, 0, &qo, NULL, NULL),
              TILEOPS_INVALID_ARGUMENT, "query");
  CHECK_FAILS(tileops_rotary_embedding(&pt, NULL, NULL, kD, &ct, 1, 0, &qo, NULL, NULL),
              TILEOPS_INVALID_ARGUMENT, "query");
  CHECK_FAILS(tileops_apply_rotary_pos_emb(&qt, NULL, &cos_t, &ct, kD, 1, &qo, NULL, NULL),
              TILEOPS_INVALID_ARGUMENT, "sin");
  CHECK(untouched(q_out, kT * kH * kD));
}

static void test_reshape_and_cache(void) {
  enum { kBlocks = 2, kBlock = 16, kRow = kH * kD };
  float key[kT * kRow], value[kT * kRow];
  static float kc[kBlocks * kBlock * kRow], vc[kBlocks * kBlock * kRow];
  static float kv[2 * kBlocks * kBlock * kRow];
  for (int i = 0; i < kT * kRow; ++i) {
    key[i] = (float)i;
    value[i] = (float)-i;
  }
  int32_t slots[kT] = {17, -1, 0};
  const int64_t row_shape[] = {kT, kH, kD};
  const int64_t cache_shape[] = {kBlocks, kBlock, kH, kD};
  const int64_t kv_shape[] = {2, kBlocks, kBlock, kH, kD};
  const int64_t slot_shape[] = {kT};
  const tileops_tensor k = tensor(key, TILEOPS_FLOAT32, 3, row_shape, NULL);
  const tileops_tensor v = tensor(value, TILEOPS_FLOAT32, 3, row_shape, NULL);
  const tileops_tensor kct = tensor(kc, TILEOPS_FLOAT32, 4, cache_shape, NULL);
  const tileops_tensor vct = tensor(vc, TILEOPS_FLOAT32, 4, cache_shape, NULL);
  const tileops_tensor kvt = tensor(kv, TILEOPS_FLOAT32, 5, kv_shape, NULL);
  const tileops_tensor st = tensor(slots, TILEOPS_INT32, 1, slot_shape, NULL);
  poison(kc, kBlocks * kBlock * kRow);
  poison(vc, kBlocks * kBlock * kRow);
  poison(kv, 2 * kBlocks * kBlock * kRow);
  CHECK_OK(tileops_reshape_and_cache(&k, &v, &kct, &vct, &st, NULL, NULL, NULL));
  CHECK_OK(tileops_reshape_and_cache_combined(&k, &v, &kvt, &st, NULL));
  CHECK(memcmp(kc + 17 * kRow, key, kRow * sizeof(float)) == 0);
  CHECK(memcmp(vc + 17 * kRow, value, kRow * sizeof(float)) == 0);
  CHECK(memcmp(kc, key + 2 * kRow, kRow * sizeof(float)) == 0);
  CHECK(memcmp(kv, kc, sizeof kc) == 0);
  CHECK(memcmp(kv + kBlocks * kBlock * kRow, vc, sizeof vc) == 0);
  CHECK(untouched(kc + kRow, 16 * kRow)); /* slots 1..16 were never written */

  slots[1] = kBlocks * kBlock;
  poison(kc, kBlocks * kBlock * kRow);
  CHECK_FAILS(tileops_reshape_and_cache(&k, &v, &kct, &vct, &st, NULL, NULL, NULL),
              TILEOPS_INVALID_ARGUMENT, "slot_mapping");
  CHECK(untouched(kc, kBlocks * kBlock * kRow));
  slots[1] = -1;
  CHECK_FAILS(tileops_reshape_and_cache(&k, &v, &kct, NULL, &st, NULL, NULL, NULL),
              TILEOPS_INVALID_ARGUMENT, "value_cache");
  CHECK_FAILS(tileops_reshape_and_cache_combined(&k, &v, &kct, &st, NULL), TILEOPS_INVALID_ARGUMENT,
              "kv_cache");
}

static void test_sampling(void) {
  enum { kB = 2, kV = 5 };
  float logits[kB * kV] = {0, 3, 1, -1, 2, 5, 0, 0, 9, 1};
  float probs[kB * kV] = {0.1f, 0.6f, 0.1f, 0.1f, 0.1f, 0.2f, 0.2f, 0.2f, 0.3f, 0.1f};
  int64_t out[kB] = {-1, -1};
  int32_t out32[kB] = {-1, -1};
  int64_t k1[1] = {1};
  const int64_t shape[] = {kB, kV};
  const int64_t b_shape[] = {kB};
  const int64_t one[] = {1};
  const tileops_tensor lt = tensor(logits, TILEOPS_FLOAT32, 2, shape, NULL);
  const tileops_tensor pt = tensor(probs, TILEOPS_FLOAT32, 2, shape, NULL);
  const tileops_tensor ot = tensor(out, TILEOPS_INT64, 1, b_shape, NULL);
  const tileops_tensor o32 = tensor(out32, TILEOPS_INT32, 1, b_shape, NULL);
  int16_t out16[kB] = {-1, -1};
  const tileops_tensor o16 = tensor(out16, TILEOPS_INT16, 1, b_shape, NULL);
  const tileops_tensor kt = tensor(k1, TILEOPS_INT64, 1, one, NULL);
  CHECK_OK(tileops_top_k_top_p_sampler(&lt, &kt, NULL, 7, &ot, NULL));
  CHECK(out[0] == 1 && out[1] == 3);
  out[0] = out[1] = -1;
  CHECK_OK(tileops_top_k_top_p_sampler_scalar(&lt, 1, 1.0, 7, &ot, NULL));
  CHECK(out[0] == 1 && out[1] == 3);
  CHECK_OK(tileops_topk_topp_sampling(&pt, 1, 1.0, 7, &o32, NULL));
  CHECK(out32[0] == 1 && out32[1] == 3);
  CHECK_OK(tileops_top_k_top_p_sampler(&lt, NULL, NULL, 7, &ot, NULL));
  CHECK(out[0] >= 0 && out[0] < kV && out[1] >= 0 && out[1] < kV);
  /* Tokens of either width: int32 from the logits sampler, int64 from the probs one. */
  out32[0] = out32[1] = -1;
  CHECK_OK(tileops_top_k_top_p_sampler(&lt, &kt, NULL, 7, &o32, NULL));
  CHECK(out32[0] == 1 && out32[1] == 3);
  out[0] = out[1] = -1;
  CHECK_OK(tileops_topk_topp_sampling(&pt, 1, 1.0, 7, &ot, NULL));
  CHECK(out[0] == 1 && out[1] == 3);

  out[0] = out[1] = -1;
  CHECK_FAILS(tileops_top_k_top_p_sampler_scalar(&lt, 0, 0.0, 7, &ot, NULL),
              TILEOPS_INVALID_ARGUMENT, "p");
  CHECK_FAILS(tileops_top_k_top_p_sampler(&lt, NULL, NULL, 7, &o16, NULL), TILEOPS_INVALID_TYPE,
              "out");
  CHECK_FAILS(tileops_topk_topp_sampling(&lt, 0, 1.0, 7, &o32, NULL), TILEOPS_INVALID_ARGUMENT,
              "probs");      /* negative entries */
  logits[kV + 2] = INFINITY; /* row 1: its message says +inf, not NaN */
  CHECK_FAILS(tileops_top_k_top_p_sampler_scalar(&lt, 1, 1.0, 7, &ot, NULL),
              TILEOPS_INVALID_ARGUMENT, "logits");
  CHECK(strstr(tileops_last_error(), "+inf in row 1") != NULL);
  CHECK(strstr(tileops_last_error(), "NaN") == NULL);
  CHECK(out[0] == -1 && out[1] == -1);
}

int main(void) {
  test_rotary();
  test_reshape_and_cache();
  test_sampling();
  return finish("c_api_kv");
}
