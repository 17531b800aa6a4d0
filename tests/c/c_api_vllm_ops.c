/* The C API entries of vLLM's operators from plain C11: gelu_and_mul, gelu_tanh_and_mul,
 * fatrelu_and_mul, mul_and_silu, gelu_new, gelu_fast, gelu_quick, swap_blocks, copy_blocks and
 * top_k_top_p_mask. Results against double references written here (strided and in-place cases
 * included), then the bad inputs of each entry: the status, the argument the message names, and
 * outputs left untouched. */
#include <stdint.h>

#include "check.h"

static const double kPi = 3.14159265358979323846;

static double gelu(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }
static double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + tanh(sqrt(2.0 / kPi) * (x + 0.044715 * x * x * x)));
}
static double gelu_fast(double x) {
  return 0.5 * x * (1.0 + tanh(0.7978845608 * x * (1.0 + 0.044715 * x * x)));
}
static double gelu_quick(double x) { return x / (1.0 + exp(-1.702 * x)); }
static double silu(double x) { return x / (1.0 + exp(-x)); }

static void fill(float* data, size_t n, double step) {
  for (size_t i = 0; i < n; ++i) data[i] = (float)(3.0 * sin(step * (double)(i + 1)));
}

typedef tileops_status (*GatedEntry)(const tileops_tensor*, int32_t, const tileops_tensor*,
                                     const tileops_context*);

/* out[r, c] = f(x[r, c]) * x[r, 5 + c] over rows of width 10, and the gated errors. */
static void check_gated(const char* name, GatedEntry entry, double (*f)(double)) {
  float x[3 * 10];
  float y[3 * 5];
  const int64_t shape[] = {3, 10};
  const int64_t half_shape[] = {3, 5};
  fill(x, 30, 0.7);
  const tileops_tensor in = tensor(x, TILEOPS_FLOAT32, 2, shape, NULL);
  const tileops_tensor out = tensor(y, TILEOPS_FLOAT32, 2, half_shape, NULL);
  poison(y, 15);
  CHECK_OK(entry(&in, -1, &out, NULL));
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 5; ++c) {
      if (!close_to(y[r * 5 + c], f(x[r * 10 + c]) * x[r * 10 + 5 + c])) {
        fprintf(stderr, "%s: row %d col %d: %g\n", name, r, c, (double)y[r * 5 + c]);
        ++g_failures;
      }
    }
  }
  /* Along dim 0 of a [6, 5] view: f(rows 0-2) * rows 3-5, into a transposed out. */
  const int64_t tall[] = {6, 5};
  const int64_t out_t_strides[] = {1, 3};
  const tileops_tensor tall_in = tensor(x, TILEOPS_FLOAT32, 2, tall, NULL);
  const tileops_tensor out_t = tensor(y, TILEOPS_FLOAT32, 2, half_shape, out_t_strides);
  poison(y, 15);
  const tileops_context ctx = {NULL, 0};
  CHECK_OK(entry(&tall_in, 0, &out_t, &ctx));
  for (int i = 0; i < 15; ++i) {
    const int r = i / 5, c = i % 5;
    CHECK(close_to(y[c * 3 + r], f(x[i]) * x[15 + i]));
  }

  /* Errors: an odd extent, a dim out of range, out of the full width, another dtype, NULL. */
  const int64_t odd_shape[] = {3, 9};
  const tileops_tensor odd = tensor(x, TILEOPS_FLOAT32, 2, odd_shape, NULL);
  const tileops_tensor full_out = tensor(y, TILEOPS_FLOAT32, 2, shape, NULL);
  const tileops_tensor half_out = tensor(y, TILEOPS_FLOAT16, 2, half_shape, NULL);
  poison(y, 15);
  CHECK_FAILS(entry(&odd, -1, &out, NULL), TILEOPS_INVALID_ARGUMENT, "input");
  CHECK_FAILS(entry(&in, 2, &out, NULL), TILEOPS_INVALID_ARGUMENT, "dim");
  CHECK_FAILS(entry(&in, -1, &full_out, NULL), TILEOPS_INVALID_ARGUMENT, "out");
  CHECK_FAILS(entry(&in, -1, &half_out, NULL), TILEOPS_INVALID_TYPE, "out");
  CHECK_FAILS(entry(NULL, -1, &out, NULL), TILEOPS_INVALID_ARGUMENT, "input");
  CHECK(untouched(y, 15));
}

static void test_gated(void) {
  check_gated("gelu_and_mul", tileops_gelu_and_mul, gelu);
  check_gated("gelu_tanh_and_mul", tileops_gelu_tanh_and_mul, gelu_tanh);

  /* mul_and_silu: out = a * silu(b) (the activation on the second half). */
  float x[2 * 8];
  float y[2 * 4];
  const int64_t shape[] = {2, 8};
  const int64_t half_shape[] = {2, 4};
  fill(x, 16, 0.9);
  const tileops_tensor in = tensor(x, TILEOPS_FLOAT32, 2, shape, NULL);
  const tileops_tensor out = tensor(y, TILEOPS_FLOAT32, 2, half_shape, NULL);
  poison(y, 8);
  CHECK_OK(tileops_mul_and_silu(&in, -1, &out, NULL));
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 4; ++c) {
      CHECK(close_to(y[r * 4 + c], x[r * 8 + c] * silu(x[r * 8 + 4 + c])));
    }
  }
  const int64_t odd_shape[] = {2, 7};
  const tileops_tensor odd = tensor(x, TILEOPS_FLOAT32, 2, odd_shape, NULL);
  poison(y, 8);
  CHECK_FAILS(tileops_mul_and_silu(&odd, -1, &out, NULL), TILEOPS_INVALID_ARGUMENT, "input");
  CHECK_FAILS(tileops_mul_and_silu(&in, -1, NULL, NULL), TILEOPS_INVALID_ARGUMENT, "out");
  CHECK(untouched(y, 8));

  /* fatrelu_and_mul: where(a > threshold, a, 0) * b, threshold 0.5 and the default-like 0. */
  for (int t = 0; t < 2; ++t) {
    const double threshold = t == 0 ? 0.5 : 0.0;
    poison(y, 8);
    CHECK_OK(tileops_fatrelu_and_mul(&in, threshold, -1, &out, NULL));
    for (int r = 0; r < 2; ++r) {
      for (int c = 0; c < 4; ++c) {
        const double a = x[r * 8 + c];
        CHECK(close_to(y[r * 4 + c], (a > threshold ? a : 0.0) * x[r * 8 + 4 + c]));
      }
    }
  }
  int32_t ints[16] = {0};
  const tileops_tensor int_in = tensor(ints, TILEOPS_INT32, 2, shape, NULL);
  poison(y, 8);
  CHECK_FAILS(tileops_fatrelu_and_mul(&int_in, 0.0, -1, &out, NULL), TILEOPS_INVALID_TYPE, "input");
  CHECK_FAILS(tileops_fatrelu_and_mul(&in, 0.0, 5, &out, NULL), TILEOPS_INVALID_ARGUMENT, "dim");
  CHECK(untouched(y, 8));
}

typedef tileops_status (*UnaryEntry)(const tileops_tensor*, const tileops_tensor*,
                                     const tileops_context*);

/* out = f(x) on [4, 6] (strided input: every other column of [4, 12]), in place, and errors. */
static void check_unary(const char* name, UnaryEntry entry, double (*f)(double)) {
  float x[4 * 12];
  float y[4 * 6];
  const int64_t shape[] = {4, 6};
  const int64_t wide_strides[] = {12, 2};
  fill(x, 48, 0.45);
  const tileops_tensor in = tensor(x, TILEOPS_FLOAT32, 2, shape, wide_strides);
  const tileops_tensor out = tensor(y, TILEOPS_FLOAT32, 2, shape, NULL);
  poison(y, 24);
  CHECK_OK(entry(&in, &out, NULL));
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 6; ++c) {
      if (!close_to(y[r * 6 + c], f(x[r * 12 + 2 * c]))) {
        fprintf(stderr, "%s: row %d col %d: %g\n", name, r, c, (double)y[r * 6 + c]);
        ++g_failures;
      }
    }
  }
  /* In place: out is the input itself. */
  float z[24];
  fill(z, 24, 0.3);
  float expected[24];
  for (int i = 0; i < 24; ++i) expected[i] = (float)f(z[i]);
  const tileops_tensor zt = tensor(z, TILEOPS_FLOAT32, 2, shape, NULL);
  CHECK_OK(entry(&zt, &zt, NULL));
  for (int i = 0; i < 24; ++i) CHECK(close_to(z[i], expected[i]));

  /* Errors: out of another shape or dtype, an integer input, NULL input. */
  const int64_t short_shape[] = {4, 5};
  const tileops_tensor short_out = tensor(y, TILEOPS_FLOAT32, 2, short_shape, NULL);
  const tileops_tensor bf16_out = tensor(y, TILEOPS_BFLOAT16, 2, shape, NULL);
  int64_t ints[24] = {0};
  const tileops_tensor int_in = tensor(ints, TILEOPS_INT64, 2, shape, NULL);
  poison(y, 24);
  CHECK_FAILS(entry(&in, &short_out, NULL), TILEOPS_INVALID_ARGUMENT, "out");
  CHECK_FAILS(entry(&in, &bf16_out, NULL), TILEOPS_INVALID_TYPE, "out");
  CHECK_FAILS(entry(&int_in, &out, NULL), TILEOPS_INVALID_TYPE, "input");
  CHECK_FAILS(entry(NULL, &out, NULL), TILEOPS_INVALID_ARGUMENT, "input");
  CHECK(untouched(y, 24));
}

static void test_unary(void) {
  check_unary("gelu_new", tileops_gelu_new, gelu_tanh);
  check_unary("gelu_fast", tileops_gelu_fast, gelu_fast);
  check_unary("gelu_quick", tileops_gelu_quick, gelu_quick);
}

/* Blocks of [2, 3] floats: block b's element j is 100·tag + 10·b + j. */
static void fill_blocks(float* data, int blocks, int tag) {
  for (int b = 0; b < blocks; ++b) {
    for (int j = 0; j < 6; ++j) data[b * 6 + j] = (float)(100 * tag + 10 * b + j);
  }
}

static void test_block_copies(void) {
  float src[4 * 6];
  float dst[5 * 6];
  fill_blocks(src, 4, 1);
  fill_blocks(dst, 5, 2);
  const int64_t src_shape[] = {4, 2, 3};
  const int64_t dst_shape[] = {5, 2, 3};
  const tileops_tensor src_t = tensor(src, TILEOPS_FLOAT32, 3, src_shape, NULL);
  const tileops_tensor dst_t = tensor(dst, TILEOPS_FLOAT32, 3, dst_shape, NULL);
  /* int64 (vLLM's) and int32 mappings: dst[4] = src[0], dst[1] = src[3]. */
  int64_t pairs64[] = {0, 4, 3, 1};
  int32_t pairs32[] = {2, 0};
  const int64_t two_rows[] = {2, 2};
  const int64_t one_row[] = {1, 2};
  const tileops_tensor map64 = tensor(pairs64, TILEOPS_INT64, 2, two_rows, NULL);
  const tileops_tensor map32 = tensor(pairs32, TILEOPS_INT32, 2, one_row, NULL);
  CHECK_OK(tileops_swap_blocks(&src_t, &dst_t, &map64, NULL));
  CHECK_OK(tileops_swap_blocks(&src_t, &dst_t, &map32, NULL));
  for (int b = 0; b < 5; ++b) {
    const int from_src = b == 4 ? 0 : b == 1 ? 3 : b == 0 ? 2 : -1;
    for (int j = 0; j < 6; ++j) {
      const float want = from_src >= 0 ? src[from_src * 6 + j] : (float)(200 + 10 * b + j);
      CHECK(dst[b * 6 + j] == want);
    }
  }

  /* copy_blocks in row order within one cache: a chain 0 -> 1 -> 2. */
  float cache[3 * 6];
  fill_blocks(cache, 3, 3);
  const int64_t cache_shape[] = {3, 2, 3};
  const tileops_tensor cache_t = tensor(cache, TILEOPS_FLOAT32, 3, cache_shape, NULL);
  int64_t chain[] = {0, 1, 1, 2};
  const tileops_tensor chain_t = tensor(chain, TILEOPS_INT64, 2, two_rows, NULL);
  CHECK_OK(tileops_copy_blocks(&cache_t, &chain_t, NULL));
  for (int b = 0; b < 3; ++b) {
    for (int j = 0; j < 6; ++j) CHECK(cache[b * 6 + j] == (float)(300 + j));
  }

  /* Errors, nothing written: an id out of range (either column), a mapping of three columns or
   * of floats, dst of another dtype or block shape, one buffer as src and dst, NULL mapping. */
  float before_dst[5 * 6];
  float before_cache[3 * 6];
  memcpy(before_dst, dst, sizeof dst);
  memcpy(before_cache, cache, sizeof cache);
  int64_t bad_src[] = {0, 1, 4, 0};
  int64_t bad_dst[] = {0, 5};
  int64_t three[] = {0, 1, 2};
  const int64_t three_cols[] = {1, 3};
  const tileops_tensor bad_src_t = tensor(bad_src, TILEOPS_INT64, 2, two_rows, NULL);
  const tileops_tensor bad_dst_t = tensor(bad_dst, TILEOPS_INT64, 2, one_row, NULL);
  const tileops_tensor three_t = tensor(three, TILEOPS_INT64, 2, three_cols, NULL);
  const tileops_tensor float_map = tensor(src, TILEOPS_FLOAT32, 2, two_rows, NULL);
  const tileops_tensor half_dst = tensor(dst, TILEOPS_FLOAT16, 3, dst_shape, NULL);
  const int64_t other_block[] = {5, 3, 2};
  const tileops_tensor reshaped_dst = tensor(dst, TILEOPS_FLOAT32, 3, other_block, NULL);
  CHECK_FAILS(tileops_swap_blocks(&src_t, &dst_t, &bad_src_t, NULL), TILEOPS_INVALID_ARGUMENT,
              "block_mapping");
  CHECK_FAILS(tileops_swap_blocks(&src_t, &dst_t, &bad_dst_t, NULL), TILEOPS_INVALID_ARGUMENT,
              "block_mapping");
  CHECK_FAILS(tileops_swap_blocks(&src_t, &dst_t, &three_t, NULL), TILEOPS_INVALID_ARGUMENT,
              "block_mapping");
  CHECK_FAILS(tileops_swap_blocks(&src_t, &dst_t, &float_map, NULL), TILEOPS_INVALID_TYPE,
              "block_mapping");
  CHECK_FAILS(tileops_swap_blocks(&src_t, &half_dst, &map64, NULL), TILEOPS_INVALID_TYPE, "dst");
  CHECK_FAILS(tileops_swap_blocks(&src_t, &reshaped_dst, &map64, NULL), TILEOPS_INVALID_ARGUMENT,
              "dst");
  CHECK_FAILS(tileops_swap_blocks(&dst_t, &dst_t, &map32, NULL), TILEOPS_INVALID_ARGUMENT, "dst");
  CHECK_FAILS(tileops_swap_blocks(&src_t, &dst_t, NULL, NULL), TILEOPS_INVALID_ARGUMENT,
              "block_mapping");
  CHECK_FAILS(tileops_copy_blocks(&cache_t, &bad_src_t, NULL), TILEOPS_INVALID_ARGUMENT,
              "block_mapping");
  CHECK_FAILS(tileops_copy_blocks(&cache_t, &float_map, NULL), TILEOPS_INVALID_TYPE,
              "block_mapping");
  CHECK_FAILS(tileops_copy_blocks(NULL, &chain_t, NULL), TILEOPS_INVALID_ARGUMENT, "cache");
  CHECK(memcmp(before_dst, dst, sizeof dst) == 0);
  CHECK(memcmp(before_cache, cache, sizeof cache) == 0);
}

static void test_top_k_top_p_mask(void) {
  const float inf = INFINITY;
  /* Row 0: top-2 keeps the tied 3s (three tokens); row 1: p = 0.5 of four equal logits keeps
   * the two higher indices; row 2: neither filter (k = V, p = 1). */
  float logits[3 * 5] = {1, 3, 3, 2, 3, 0, 0, 0, 0, -inf, 4, -1, 2, 0, 1};
  const float expected[3 * 5] = {-inf, 3, 3, -inf, 3, -inf, -inf, 0, 0, -inf, 4, -1, 2, 0, 1};
  int32_t k[3] = {2, 5, 5};
  float p[3] = {1.0f, 0.5f, 1.0f};
  const int64_t shape[] = {3, 5};
  const int64_t rows[] = {3};
  const tileops_tensor logits_t = tensor(logits, TILEOPS_FLOAT32, 2, shape, NULL);
  const tileops_tensor k_t = tensor(k, TILEOPS_INT32, 1, rows, NULL);
  const tileops_tensor p_t = tensor(p, TILEOPS_FLOAT32, 1, rows, NULL);
  CHECK_OK(tileops_top_k_top_p_mask(&logits_t, &k_t, &p_t, NULL));
  for (int i = 0; i < 15; ++i) CHECK(logits[i] == expected[i]);
  /* NULL k and p: nothing to mask. */
  CHECK_OK(tileops_top_k_top_p_mask(&logits_t, NULL, NULL, NULL));
  for (int i = 0; i < 15; ++i) CHECK(logits[i] == expected[i]);

  /* Errors, nothing written: k out of [1, V], p out of (0, 1], a NaN logit, a float k, a k of
   * two elements for three rows, NULL logits. */
  float fresh[3 * 5];
  fill(fresh, 15, 0.8);
  float before[3 * 5];
  memcpy(before, fresh, sizeof fresh);
  const tileops_tensor fresh_t = tensor(fresh, TILEOPS_FLOAT32, 2, shape, NULL);
  k[1] = 6;
  CHECK_FAILS(tileops_top_k_top_p_mask(&fresh_t, &k_t, NULL, NULL), TILEOPS_INVALID_ARGUMENT, "k");
  k[1] = 0;
  CHECK_FAILS(tileops_top_k_top_p_mask(&fresh_t, &k_t, NULL, NULL), TILEOPS_INVALID_ARGUMENT, "k");
  k[1] = 2;
  p[2] = 0.0f;
  CHECK_FAILS(tileops_top_k_top_p_mask(&fresh_t, &k_t, &p_t, NULL), TILEOPS_INVALID_ARGUMENT, "p");
  p[2] = 0.7f;
  const tileops_tensor float_k = tensor(p, TILEOPS_FLOAT32, 1, rows, NULL);
  const int64_t two[] = {2};
  const tileops_tensor short_k = tensor(k, TILEOPS_INT32, 1, two, NULL);
  CHECK_FAILS(tileops_top_k_top_p_mask(&fresh_t, &float_k, NULL, NULL), TILEOPS_INVALID_TYPE, "k");
  CHECK_FAILS(tileops_top_k_top_p_mask(&fresh_t, &short_k, NULL, NULL), TILEOPS_INVALID_ARGUMENT,
              "k");
  CHECK_FAILS(tileops_top_k_top_p_mask(NULL, &k_t, NULL, NULL), TILEOPS_INVALID_ARGUMENT, "logits");
  CHECK(memcmp(before, fresh, sizeof fresh) == 0);
  fresh[12] = NAN;
  memcpy(before, fresh, sizeof fresh);
  CHECK_FAILS(tileops_top_k_top_p_mask(&fresh_t, &k_t, &p_t, NULL), TILEOPS_INVALID_ARGUMENT,
              "logits");
  for (int i = 0; i < 15; ++i) CHECK(i == 12 ? isnan(fresh[i]) : fresh[i] == before[i]);
}

int main(void) {
  test_gated();
  test_unary();
  test_block_copies();
  test_top_k_top_p_mask();
  return finish("c_api_vllm_ops");
}
