/* The C API entries of add, mul, cast, swiglu, silu_and_mul, add_rms_norm, causal_softmax and
 * scaled_softmax from plain C11: numeric results against double references written here, an
 * error per entry (status and the argument named), outputs untouched on failure, NULL context.
 * Built like c_api_test.c once those operators are in the library. */
#include <stdint.h>

#include "check.h"

static double silu(double x) { return x / (1.0 + exp(-x)); }

static void fill(float* data, size_t n, double step) {
  for (size_t i = 0; i < n; ++i) data[i] = (float)sin(step * (double)(i + 1));
}

static void test_add_and_mul(void) {
  float x[2 * 3];
  float b[3];
  float y[2 * 3];
  const int64_t shape[] = {2, 3};
  const int64_t row_shape[] = {3};
  fill(x, 6, 0.9);
  fill(b, 3, 1.7);
  const tileops_tensor in = tensor(x, TILEOPS_FLOAT32, 2, shape, NULL);
  const tileops_tensor row = tensor(b, TILEOPS_FLOAT32, 1, row_shape, NULL);
  const tileops_tensor out = tensor(y, TILEOPS_FLOAT32, 2, shape, NULL);

  /* [2, 3] with a broadcast [3]. */
  poison(y, 6);
  CHECK_OK(tileops_add(&in, &row, &out, NULL));
  for (int i = 0; i < 6; ++i) CHECK(y[i] == x[i] + b[i % 3]);
  poison(y, 6);
  CHECK_OK(tileops_mul(&row, &in, &out, NULL));
  for (int i = 0; i < 6; ++i) CHECK(y[i] == b[i % 3] * x[i]);

  /* int32 and int64, in place (out is input). */
  int32_t p[4] = {1, -2, 3, 40000};
  int32_t q[4] = {5, 6, -7, 40000};
  const int64_t four[] = {4};
  const tileops_tensor pt = tensor(p, TILEOPS_INT32, 1, four, NULL);
  const tileops_tensor qt = tensor(q, TILEOPS_INT32, 1, four, NULL);
  CHECK_OK(tileops_add(&pt, &qt, &pt, NULL));
  CHECK(p[0] == 6 && p[1] == 4 && p[2] == -4 && p[3] == 80000);
  int64_t r[2] = {3000000000LL, -4};
  int64_t s[2] = {3, 5};
  const int64_t two[] = {2};
  const tileops_tensor rt = tensor(r, TILEOPS_INT64, 1, two, NULL);
  const tileops_tensor st = tensor(s, TILEOPS_INT64, 1, two, NULL);
  CHECK_OK(tileops_mul(&rt, &st, &rt, NULL));
  CHECK(r[0] == 9000000000LL && r[1] == -20);

  /* Errors: out of another dtype, out of the wrong shape, NULL other. */
  const tileops_tensor half_out = tensor(y, TILEOPS_FLOAT16, 2, shape, NULL);
  const int64_t wide_shape[] = {2, 4};
  float wide[8];
  poison(wide, 8);
  const tileops_tensor wide_out = tensor(wide, TILEOPS_FLOAT32, 2, wide_shape, NULL);
  poison(y, 6);
  CHECK_FAILS(tileops_add(&in, &row, &half_out, NULL), TILEOPS_INVALID_TYPE, "out");
  CHECK_FAILS(tileops_mul(&in, &row, &half_out, NULL), TILEOPS_INVALID_TYPE, "out");
  CHECK_FAILS(tileops_add(&in, &row, &wide_out, NULL), TILEOPS_INVALID_ARGUMENT, "out");
  CHECK_FAILS(tileops_mul(&in, NULL, &out, NULL), TILEOPS_INVALID_ARGUMENT, "other");
  CHECK(untouched(y, 6) && untouched(wide, 8));
}

static void test_cast(void) {
  const float values[6] = {1.0f, -2.0f, 65504.0f, 1e6f, 2.75f, -2.75f};
  uint16_t half[6];
  uint16_t bf16[6];
  int32_t ints[6];
  float back[6];
  const int64_t six[] = {6};
  const tileops_tensor in = tensor((void*)values, TILEOPS_FLOAT32, 1, six, NULL);
  const tileops_tensor half_t = tensor(half, TILEOPS_FLOAT16, 1, six, NULL);
  const tileops_tensor bf16_t = tensor(bf16, TILEOPS_BFLOAT16, 1, six, NULL);
  const tileops_tensor ints_t = tensor(ints, TILEOPS_INT32, 1, six, NULL);
  const tileops_tensor back_t = tensor(back, TILEOPS_FLOAT32, 1, six, NULL);

  /* float16 bits: 1, -2, the largest finite, overflow to +Inf, 2.75, -2.75. */
  const uint16_t half_bits[6] = {0x3C00, 0xC000, 0x7BFF, 0x7C00, 0x4180, 0xC180};
  CHECK_OK(tileops_cast(&in, &half_t, NULL));
  for (int i = 0; i < 6; ++i) CHECK(half[i] == half_bits[i]);
  CHECK_OK(tileops_cast(&half_t, &back_t, NULL));
  CHECK(back[0] == 1.0f && back[2] == 65504.0f && isinf(back[3]) && back[5] == -2.75f);
  CHECK_OK(tileops_cast(&in, &bf16_t, NULL));
  CHECK(bf16[0] == 0x3F80 && bf16[1] == 0xC000 && bf16[4] == 0x4030);
  /* To integers: truncation toward zero. */
  CHECK_OK(tileops_cast(&in, &ints_t, NULL));
  CHECK(ints[0] == 1 && ints[1] == -2 && ints[3] == 1000000 && ints[4] == 2 && ints[5] == -2);

  /* Errors: out of another shape, out with a bad dtype enum, NULL input. */
  const int64_t five[] = {5};
  float y[6];
  poison(y, 6);
  const tileops_tensor short_out = tensor(y, TILEOPS_FLOAT32, 1, five, NULL);
  CHECK_FAILS(tileops_cast(&in, &short_out, NULL), TILEOPS_INVALID_ARGUMENT, "out");
  tileops_tensor bad_out = tensor(y, TILEOPS_FLOAT32, 1, six, NULL);
  bad_out.dtype = 77;
  CHECK_FAILS(tileops_cast(&in, &bad_out, NULL), TILEOPS_INVALID_ARGUMENT, "out");
  CHECK_FAILS(tileops_cast(NULL, &back_t, NULL), TILEOPS_INVALID_ARGUMENT, "input");
  CHECK(untouched(y, 6));
}

static void test_swiglu_and_silu_and_mul(void) {
  float x[2 * 6];
  float g[2 * 6];
  float y[2 * 6];
  const int64_t shape[] = {2, 6};
  const int64_t half_shape[] = {2, 3};
  fill(x, 12, 0.8);
  fill(g, 12, 1.3);
  const tileops_tensor in = tensor(x, TILEOPS_FLOAT32, 2, shape, NULL);
  const tileops_tensor gate = tensor(g, TILEOPS_FLOAT32, 2, shape, NULL);
  const tileops_tensor out = tensor(y, TILEOPS_FLOAT32, 2, shape, NULL);
  const tileops_tensor half_out = tensor(y, TILEOPS_FLOAT32, 2, half_shape, NULL);

  poison(y, 12);
  CHECK_OK(tileops_swiglu(&in, &gate, &out, NULL));
  for (int i = 0; i < 12; ++i) CHECK(close_to(y[i], x[i] * silu(g[i])));

  /* Along the last dim: silu(x[:, :3]) * x[:, 3:]. */
  poison(y, 12);
  CHECK_OK(tileops_silu_and_mul(&in, -1, &half_out, NULL));
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 3; ++c) {
      CHECK(close_to(y[r * 3 + c], silu(x[r * 6 + c]) * x[r * 6 + 3 + c]));
    }
  }
  /* Along dim 0 of a [4, 3] view of the same data: silu(rows 0-1) * rows 2-3. */
  const int64_t tall[] = {4, 3};
  const tileops_tensor tall_in = tensor(x, TILEOPS_FLOAT32, 2, tall, NULL);
  poison(y, 12);
  CHECK_OK(tileops_silu_and_mul(&tall_in, 0, &half_out, NULL));
  for (int i = 0; i < 6; ++i) CHECK(close_to(y[i], silu(x[i]) * x[6 + i]));

  /* Errors: gate of another shape, out of the full width, gate of another dtype. */
  const tileops_tensor short_gate = tensor(g, TILEOPS_FLOAT32, 2, half_shape, NULL);
  const tileops_tensor half_gate = tensor(g, TILEOPS_FLOAT16, 2, shape, NULL);
  poison(y, 12);
  CHECK_FAILS(tileops_swiglu(&in, &short_gate, &out, NULL), TILEOPS_INVALID_ARGUMENT, "gate");
  CHECK_FAILS(tileops_swiglu(&in, &half_gate, &out, NULL), TILEOPS_INVALID_TYPE, "gate");
  CHECK_FAILS(tileops_silu_and_mul(&in, -1, &out, NULL), TILEOPS_INVALID_ARGUMENT, "out");
  CHECK_FAILS(tileops_silu_and_mul(NULL, -1, &half_out, NULL), TILEOPS_INVALID_ARGUMENT, "input");
  CHECK(untouched(y, 12));
}

/* residual_out = x + r; out = (residual_out / rms(residual_out)) * w, per row of width 4. */
static void check_add_rms_norm(const float* x, const float* r, const float* w, const float* out,
                               const float* residual_out) {
  for (int row = 0; row < 2; ++row) {
    double sum = 0.0;
    double s[4];
    for (int i = 0; i < 4; ++i) {
      s[i] = (double)(float)(x[row * 4 + i] + r[row * 4 + i]); /* rounded to float32 */
      sum += s[i] * s[i];
    }
    const double scale = 1.0 / sqrt(sum / 4 + 1e-6);
    for (int i = 0; i < 4; ++i) {
      CHECK(residual_out[row * 4 + i] == (float)s[i]);
      CHECK(close_to(out[row * 4 + i], s[i] * scale * w[i]));
    }
  }
}

static void test_add_rms_norm(void) {
  float x[8];
  float r[8];
  float w[4];
  float y[8];
  float r_out[8];
  const int64_t shape[] = {2, 4};
  const int64_t w_shape[] = {4};
  fill(x, 8, 0.6);
  fill(r, 8, 1.1);
  fill(w, 4, 0.4);
  const tileops_tensor in = tensor(x, TILEOPS_FLOAT32, 2, shape, NULL);
  const tileops_tensor res = tensor(r, TILEOPS_FLOAT32, 2, shape, NULL);
  const tileops_tensor weight = tensor(w, TILEOPS_FLOAT32, 1, w_shape, NULL);
  const tileops_tensor out = tensor(y, TILEOPS_FLOAT32, 2, shape, NULL);
  const tileops_tensor res_out = tensor(r_out, TILEOPS_FLOAT32, 2, shape, NULL);

  poison(y, 8);
  poison(r_out, 8);
  CHECK_OK(tileops_add_rms_norm(&in, &res, &weight, 1e-6, &out, &res_out, NULL));
  check_add_rms_norm(x, r, w, y, r_out);

  /* In place: out lands in input, residual_out in residual. */
  float x0[8];
  float r0[8];
  memcpy(x0, x, sizeof x);
  memcpy(r0, r, sizeof r);
  const tileops_context ctx = {NULL, 0};
  CHECK_OK(tileops_add_rms_norm(&in, &res, &weight, 1e-6, NULL, NULL, &ctx));
  check_add_rms_norm(x0, r0, w, x, r);

  /* Errors: a short weight, only one of the two outputs, out of another dtype. */
  const int64_t short_shape[] = {3};
  const tileops_tensor short_w = tensor(w, TILEOPS_FLOAT32, 1, short_shape, NULL);
  const tileops_tensor half_out = tensor(y, TILEOPS_FLOAT16, 2, shape, NULL);
  poison(y, 8);
  poison(r_out, 8);
  CHECK_FAILS(tileops_add_rms_norm(&in, &res, &short_w, 1e-6, &out, &res_out, NULL),
              TILEOPS_INVALID_ARGUMENT, "weight");
  CHECK_FAILS(tileops_add_rms_norm(&in, &res, &weight, 1e-6, &out, NULL, NULL),
              TILEOPS_INVALID_ARGUMENT, "residual_out");
  CHECK_FAILS(tileops_add_rms_norm(&in, &res, &weight, 1e-6, NULL, &res_out, NULL),
              TILEOPS_INVALID_ARGUMENT, "out");
  CHECK_FAILS(tileops_add_rms_norm(&in, &res, &weight, 1e-6, &half_out, &res_out, NULL),
              TILEOPS_INVALID_TYPE, "out");
  CHECK(untouched(y, 8) && untouched(r_out, 8));
}

/* softmax(scale * x) over row [0, visible) of width t; the rest of the row is 0. */
static void check_softmax_row(const float* x, const float* y, int t, int visible, double scale) {
  double max = -INFINITY;
  double sum = 0.0;
  for (int j = 0; j < visible; ++j) max = fmax(max, scale * x[j]);
  for (int j = 0; j < visible; ++j) sum += exp(scale * x[j] - max);
  for (int j = 0; j < t; ++j) {
    CHECK(close_to(y[j], j < visible ? exp(scale * x[j] - max) / sum : 0.0));
  }
}

static void test_softmaxes(void) {
  enum { kB = 2, kS = 3, kT = 5 };
  float x[kB * kS * kT];
  float y[kB * kS * kT];
  const int64_t shape3[] = {kB, kS, kT};
  const int64_t shape2[] = {kS, kT};
  fill(x, kB * kS * kT, 2.3);
  const tileops_tensor in3 = tensor(x, TILEOPS_FLOAT32, 3, shape3, NULL);
  const tileops_tensor out3 = tensor(y, TILEOPS_FLOAT32, 3, shape3, NULL);
  const tileops_tensor in2 = tensor(x, TILEOPS_FLOAT32, 2, shape2, NULL);
  const tileops_tensor out2 = tensor(y, TILEOPS_FLOAT32, 2, shape2, NULL);

  /* Row i of S sees columns j <= T - S + i. */
  poison(y, kB * kS * kT);
  CHECK_OK(tileops_causal_softmax(&in3, &out3, NULL));
  for (int b = 0; b < kB; ++b) {
    for (int i = 0; i < kS; ++i) {
      const int row = (b * kS + i) * kT;
      check_softmax_row(x + row, y + row, kT, kT - kS + i + 1, 1.0);
    }
  }
  poison(y, kB * kS * kT);
  CHECK_OK(tileops_causal_softmax(&in2, &out2, NULL));
  for (int i = 0; i < kS; ++i) check_softmax_row(x + i * kT, y + i * kT, kT, kT - kS + i + 1, 1.0);

  poison(y, kB * kS * kT);
  CHECK_OK(tileops_scaled_softmax(&in3, 0.5, &out3, NULL));
  for (int row = 0; row < kB * kS; ++row)
    check_softmax_row(x + row * kT, y + row * kT, kT, kT, 0.5);

  /* Errors: T < S, out of another dtype, a non-finite scale, out of another shape. */
  const int64_t wide[] = {kT, kS};
  const tileops_tensor tall_in = tensor(x, TILEOPS_FLOAT32, 2, wide, NULL);
  const tileops_tensor tall_out = tensor(y, TILEOPS_FLOAT32, 2, wide, NULL);
  const tileops_tensor half_out = tensor(y, TILEOPS_FLOAT16, 3, shape3, NULL);
  poison(y, kB * kS * kT);
  CHECK_FAILS(tileops_causal_softmax(&tall_in, &tall_out, NULL), TILEOPS_INVALID_ARGUMENT, "input");
  CHECK_FAILS(tileops_causal_softmax(&in3, &half_out, NULL), TILEOPS_INVALID_TYPE, "out");
  CHECK_FAILS(tileops_scaled_softmax(&in3, NAN, &out3, NULL), TILEOPS_INVALID_ARGUMENT, "scale");
  CHECK_FAILS(tileops_scaled_softmax(&in3, 1.0, &out2, NULL), TILEOPS_INVALID_ARGUMENT, "out");
  CHECK(untouched(y, kB * kS * kT));
}

int main(void) {
  test_add_and_mul();
  test_cast();
  test_swiglu_and_silu_and_mul();
  test_add_rms_norm();
  test_softmaxes();
  return finish("c_api_more_ops");
}
