/* The C API entries of flash_attention and paged_attention from plain C11: a causal GQA prefill
 * and a paged decode against double references written here, errors naming the argument,
 * outputs untouched on failure. */
#include <stdint.h>

#include "check.h"

enum { kT = 5, kH = 2, kHkv = 1, kD = 4 };

static void fill(float* data, size_t n, double step) {
  for (size_t i = 0; i < n; ++i) data[i] = (float)sin(step * (double)(i + 1));
}

/* Output row (t, h) of causal attention over keys 0..last (one kv head); returns the row's
 * log-sum-exp of the scaled scores. */
static double reference_row(const float* q, const float* k, const float* v, int t, int h, int last,
                            double* out) {
  double scores[kT];
  double best = -INFINITY, total = 0;
  for (int j = 0; j <= last; ++j) {
    double s = 0;
    for (int c = 0; c < kD; ++c) s += (double)q[(t * kH + h) * kD + c] * k[j * kD + c];
    scores[j] = s / sqrt((double)kD);
    if (scores[j] > best) best = scores[j];
  }
  for (int j = 0; j <= last; ++j) total += (scores[j] = exp(scores[j] - best));
  for (int c = 0; c < kD; ++c) {
    out[c] = 0;
    for (int j = 0; j <= last; ++j) out[c] += scores[j] / total * v[j * kD + c];
  }
  return best + log(total);
}

static tileops_attention_attributes attributes(int causal) {
  tileops_attention_attributes a;
  a.num_heads = kH, a.num_kv_heads = kHkv, a.head_size = kD, a.scale = 0.0, a.causal = causal;
  a.window_left = -1, a.window_right = -1, a.block_size = 0, a.sliding_window = 0;
  return a;
}

static void test_flash_attention(void) {
  float q[kT * kH * kD], k[kT * kD], v[kT * kD], y[kT * kH * kD];
  fill(q, kT * kH * kD, 0.7);
  fill(k, kT * kD, 1.3);
  fill(v, kT * kD, 0.4);
  const int64_t q_shape[] = {kT, kH, kD}, kv_shape[] = {kT, kHkv, kD};
  const tileops_tensor qt = tensor(q, TILEOPS_FLOAT32, 3, q_shape, NULL);
  const tileops_tensor kt = tensor(k, TILEOPS_FLOAT32, 3, kv_shape, NULL);
  const tileops_tensor vt = tensor(v, TILEOPS_FLOAT32, 3, kv_shape, NULL);
  const tileops_tensor out = tensor(y, TILEOPS_FLOAT32, 3, q_shape, NULL);
  const tileops_attention_attributes attrs = attributes(1);
  poison(y, kT * kH * kD);
  CHECK_OK(tileops_flash_attention(&qt, &kt, &vt, NULL, NULL, NULL, &attrs, &out, NULL));
  for (int t = 0; t < kT; ++t) {
    for (int h = 0; h < kH; ++h) {
      double expected[kD];
      reference_row(q, k, v, t, h, t, expected);
      for (int c = 0; c < kD; ++c) CHECK(fabs(y[(t * kH + h) * kD + c] - expected[c]) < 1e-5);
    }
  }
  /* Errors: 3 kv heads, disagreeing windows, NULL attributes, a half-precision key. */
  tileops_attention_attributes bad = attrs;
  bad.num_kv_heads = 3;
  poison(y, kT * kH * kD);
  CHECK_FAILS(tileops_flash_attention(&qt, &kt, &vt, NULL, NULL, NULL, &bad, &out, NULL),
              TILEOPS_INVALID_ARGUMENT, "num_kv_heads");
  bad = attrs, bad.sliding_window = 3, bad.window_left = 1, bad.window_right = 0;
  CHECK_FAILS(tileops_flash_attention(&qt, &kt, &vt, NULL, NULL, NULL, &bad, &out, NULL),
              TILEOPS_INVALID_ARGUMENT, "sliding_window");
  CHECK_FAILS(tileops_flash_attention(&qt, &kt, &vt, NULL, NULL, NULL, NULL, &out, NULL),
              TILEOPS_INVALID_ARGUMENT, "attrs");
  const tileops_tensor half_k = tensor(k, TILEOPS_FLOAT16, 3, kv_shape, NULL);
  CHECK_FAILS(tileops_flash_attention(&qt, &half_k, &vt, NULL, NULL, NULL, &attrs, &out, NULL),
              TILEOPS_INVALID_TYPE, "key");
  CHECK(untouched(y, kT * kH * kD));
}

/* flash_attention with softmax_lse [kH, kT]; NULL is the plain call; a [kT, kH] one is refused. */
static void test_flash_attention_lse(void) {
  float q[kT * kH * kD], k[kT * kD], v[kT * kD], y[kT * kH * kD], lse[kH * kT];
  fill(q, kT * kH * kD, 0.9);
  fill(k, kT * kD, 1.1);
  fill(v, kT * kD, 0.5);
  const int64_t q_shape[] = {kT, kH, kD}, kv_shape[] = {kT, kHkv, kD};
  const int64_t lse_shape[] = {kH, kT}, swapped_shape[] = {kT, kH};
  const tileops_tensor qt = tensor(q, TILEOPS_FLOAT32, 3, q_shape, NULL);
  const tileops_tensor kt = tensor(k, TILEOPS_FLOAT32, 3, kv_shape, NULL);
  const tileops_tensor vt = tensor(v, TILEOPS_FLOAT32, 3, kv_shape, NULL);
  const tileops_tensor out = tensor(y, TILEOPS_FLOAT32, 3, q_shape, NULL);
  const tileops_tensor lse_t = tensor(lse, TILEOPS_FLOAT32, 2, lse_shape, NULL);
  const tileops_attention_attributes attrs = attributes(1);
  poison(y, kT * kH * kD);
  poison(lse, kH * kT);
  CHECK_OK(tileops_flash_attention_with_lse(&qt, &kt, &vt, NULL, NULL, NULL, &attrs, &out, &lse_t,
                                            NULL));
  for (int t = 0; t < kT; ++t) {
    for (int h = 0; h < kH; ++h) {
      double expected[kD];
      const double expected_lse = reference_row(q, k, v, t, h, t, expected);
      CHECK(fabs(lse[h * kT + t] - expected_lse) < 1e-5);
      for (int c = 0; c < kD; ++c) CHECK(fabs(y[(t * kH + h) * kD + c] - expected[c]) < 1e-5);
    }
  }
  poison(y, kT * kH * kD);
  CHECK_OK(
      tileops_flash_attention_with_lse(&qt, &kt, &vt, NULL, NULL, NULL, &attrs, &out, NULL, NULL));
  for (int i = 0; i < kT * kH * kD; ++i) CHECK(y[i] == y[i]); /* every element written */
  const tileops_tensor swapped = tensor(lse, TILEOPS_FLOAT32, 2, swapped_shape, NULL);
  poison(y, kT * kH * kD);
  poison(lse, kH * kT);
  CHECK_FAILS(tileops_flash_attention_with_lse(&qt, &kt, &vt, NULL, NULL, NULL, &attrs, &out,
                                               &swapped, NULL),
              TILEOPS_INVALID_ARGUMENT, "softmax_lse");
  CHECK(untouched(y, kT * kH * kD));
  CHECK(untouched(lse, kH * kT));
}

static void test_paged_attention(void) {
  /* Two sequences of 5 and 3 keys in a cache of 4 blocks of 2 keys, blocks out of order. */
  float q[2 * kH * kD], kc[4 * 2 * kD], vc[4 * 2 * kD], y[2 * kH * kD];
  float k0[kT * kD], v0[kT * kD];
  fill(q, 2 * kH * kD, 0.3);
  fill(kc, 8 * kD, 1.1);
  fill(vc, 8 * kD, 0.6);
  const int32_t lens[] = {5, 3};
  const int32_t table[] = {3, 0, 1, 2, 1, 0}; /* [2, 3]: sequence 1 uses blocks 2, 1 */
  const int64_t q_shape[] = {2, kH, kD}, cache_shape[] = {4, 2, kHkv, kD};
  const int64_t lens_shape[] = {2}, table_shape[] = {2, 3};
  const tileops_tensor qt = tensor(q, TILEOPS_FLOAT32, 3, q_shape, NULL);
  const tileops_tensor kt = tensor(kc, TILEOPS_FLOAT32, 4, cache_shape, NULL);
  const tileops_tensor vt = tensor(vc, TILEOPS_FLOAT32, 4, cache_shape, NULL);
  const tileops_tensor lt = tensor((void*)lens, TILEOPS_INT32, 1, lens_shape, NULL);
  const tileops_tensor bt = tensor((void*)table, TILEOPS_INT32, 2, table_shape, NULL);
  const tileops_tensor out = tensor(y, TILEOPS_FLOAT32, 3, q_shape, NULL);
  const tileops_attention_attributes attrs = attributes(0);
  poison(y, 2 * kH * kD);
  CHECK_OK(tileops_paged_attention(&qt, &kt, &vt, &lt, &bt, &attrs, &out, &lt, NULL, NULL));
  for (int b = 0; b < 2; ++b) {
    for (int j = 0; j < lens[b]; ++j) {
      const int block = table[b * 3 + j / 2];
      memcpy(&k0[j * kD], &kc[(block * 2 + j % 2) * kD], sizeof(float) * kD);
      memcpy(&v0[j * kD], &vc[(block * 2 + j % 2) * kD], sizeof(float) * kD);
    }
    for (int h = 0; h < kH; ++h) {
      double expected[kD];
      reference_row(&q[b * kH * kD], k0, v0, 0, h, lens[b] - 1, expected);
      for (int c = 0; c < kD; ++c) CHECK(fabs(y[(b * kH + h) * kD + c] - expected[c]) < 1e-5);
    }
  }
  /* int64 seq_lens and block_table give the same output. */
  float y64[2 * kH * kD];
  const int64_t lens_wide[] = {5, 3};
  const int64_t table_wide[] = {3, 0, 1, 2, 1, 0};
  const tileops_tensor lens64 = tensor((void*)lens_wide, TILEOPS_INT64, 1, lens_shape, NULL);
  const tileops_tensor table64 = tensor((void*)table_wide, TILEOPS_INT64, 2, table_shape, NULL);
  const tileops_tensor out64 = tensor(y64, TILEOPS_FLOAT32, 3, q_shape, NULL);
  poison(y64, 2 * kH * kD);
  CHECK_OK(
      tileops_paged_attention(&qt, &kt, &vt, &lens64, &table64, &attrs, &out64, NULL, NULL, NULL));
  CHECK(memcmp(y, y64, sizeof(y)) == 0);
  /* Errors: a sequence longer than its blocks, a block id outside the cache, an int64 length
   * beyond int32 (its low half, 5, would be valid), an int16 seq_lens, NULL block_table. */
  const int32_t long_lens[] = {7, 3};
  const tileops_tensor long_t = tensor((void*)long_lens, TILEOPS_INT32, 1, lens_shape, NULL);
  const int64_t far_lens[] = {((int64_t)1 << 32) + 5, 3};
  const tileops_tensor far_t = tensor((void*)far_lens, TILEOPS_INT64, 1, lens_shape, NULL);
  const int16_t short_lens[] = {5, 3};
  const tileops_tensor lens16 = tensor((void*)short_lens, TILEOPS_INT16, 1, lens_shape, NULL);
  poison(y, 2 * kH * kD);
  CHECK_FAILS(tileops_paged_attention(&qt, &kt, &vt, &long_t, &bt, &attrs, &out, NULL, NULL, NULL),
              TILEOPS_INVALID_ARGUMENT, "seq_lens");
  const int32_t bad_table[] = {3, 0, 9, 2, 1, 0}; /* block 9 of 4 */
  const tileops_tensor bad_bt = tensor((void*)bad_table, TILEOPS_INT32, 2, table_shape, NULL);
  CHECK_FAILS(tileops_paged_attention(&qt, &kt, &vt, &lt, &bad_bt, &attrs, &out, NULL, NULL, NULL),
              TILEOPS_INVALID_ARGUMENT, "block_table");
  CHECK_FAILS(tileops_paged_attention(&qt, &kt, &vt, &far_t, &bt, &attrs, &out, NULL, NULL, NULL),
              TILEOPS_INVALID_ARGUMENT, "seq_lens");
  CHECK_FAILS(tileops_paged_attention(&qt, &kt, &vt, &lens16, &bt, &attrs, &out, NULL, NULL, NULL),
              TILEOPS_INVALID_TYPE, "seq_lens");
  CHECK_FAILS(tileops_paged_attention(&qt, &kt, &vt, &lt, NULL, &attrs, &out, NULL, NULL, NULL),
              TILEOPS_INVALID_ARGUMENT, "block_table");
  /* The host mirror is what the kernel reads: its bad id is named as the mirror's. */
  CHECK_FAILS(tileops_paged_attention(&qt, &kt, &vt, &lt, &bt, &attrs, &out, NULL, &bad_bt, NULL),
              TILEOPS_INVALID_ARGUMENT, "block_table_host");
  CHECK(untouched(y, 2 * kH * kD));
  /* ALiBi slopes through the options: zero slopes give the plain result; slopes of the wrong
   * length are refused naming them. */
  const float zero_slopes[kH] = {0};
  const int64_t slopes_shape[] = {kH}, short_shape[] = {kH - 1};
  const tileops_tensor st = tensor((void*)zero_slopes, TILEOPS_FLOAT32, 1, slopes_shape, NULL);
  const tileops_tensor short_st = tensor((void*)zero_slopes, TILEOPS_FLOAT32, 1, short_shape, NULL);
  tileops_paged_attention_options options = {.alibi_slopes = &st};
  float y_alibi[2 * kH * kD];
  const tileops_tensor out_alibi = tensor(y_alibi, TILEOPS_FLOAT32, 3, q_shape, NULL);
  poison(y_alibi, 2 * kH * kD);
  CHECK_OK(tileops_paged_attention_with_options(&qt, &kt, &vt, &lt, &bt, &attrs, &out_alibi,
                                                &options, NULL));
  CHECK(memcmp(y_alibi, y64, sizeof(y64)) == 0);
  CHECK_OK(tileops_paged_attention_with_options(&qt, &kt, &vt, &lt, &bt, &attrs, &out, NULL, NULL));
  CHECK(memcmp(y, y64, sizeof(y64)) == 0);
  options.alibi_slopes = &short_st;
  poison(y, 2 * kH * kD);
  CHECK_FAILS(
      tileops_paged_attention_with_options(&qt, &kt, &vt, &lt, &bt, &attrs, &out, &options, NULL),
      TILEOPS_INVALID_ARGUMENT, "alibi_slopes");
  CHECK(untouched(y, 2 * kH * kD));
}

int main(void) {
  test_flash_attention();
  test_flash_attention_lse();
  test_paged_attention();
  return finish("c_api_attention");
}
