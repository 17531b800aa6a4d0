/* quantize_weight, pack_quantized_codes and linear_quantized through the generated C entries, with
 * the size from tileops_quantized_weight_bytes: weights chosen so that quantization is exact (each
 * group's largest magnitude is 127 or 7 steps of a power-of-two scale), so the double reference is
 * the plain product; a bad attribute, a corrupt header and a wrong K are refused naming the
 * argument. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

enum { kN = 5, kK = 64, kM = 3 };

static void check_format(int32_t bits, int32_t group_size, double step, int levels) {
  float w[kN * kK];
  float x[kM * kK];
  float y[kM * kN];
  for (int j = 0; j < kN; ++j) {
    for (int p = 0; p < kK; ++p) {
      /* Every group's first element is the largest magnitude: levels steps. */
      const int level = p % 32 == 0 ? levels : (j * 7 + p * 5) % (2 * levels + 1) - levels;
      w[j * kK + p] = (float)(level * step);
    }
  }
  for (int i = 0; i < kM * kK; ++i) x[i] = (float)sin(0.37 * (double)(i + 1));
  int64_t bytes = 0;
  CHECK_OK(tileops_quantized_weight_bytes(kN, kK, bits, group_size, 1, &bytes));
  CHECK(bytes > 64);
  unsigned char* q = (unsigned char*)malloc((size_t)bytes);
  memset(q, 0xFF, (size_t)bytes);
  const int64_t w_shape[] = {kN, kK};
  const int64_t q_shape[] = {bytes};
  const int64_t x_shape[] = {kM, kK};
  const int64_t y_shape[] = {kM, kN};
  const tileops_tensor wt = tensor(w, TILEOPS_FLOAT32, 2, w_shape, NULL);
  const tileops_tensor qt = tensor(q, TILEOPS_UINT8, 1, q_shape, NULL);
  const tileops_tensor xt = tensor(x, TILEOPS_FLOAT32, 2, x_shape, NULL);
  const tileops_tensor yt = tensor(y, TILEOPS_FLOAT32, 2, y_shape, NULL);
  CHECK_OK(tileops_quantize_weight(&wt, bits, group_size, 1, &qt, NULL));
  poison(y, kM * kN);
  CHECK_OK(tileops_linear_quantized(&xt, &qt, NULL, &yt, NULL));
  for (int i = 0; i < kM; ++i) {
    for (int j = 0; j < kN; ++j) {
      double e = 0;
      for (int p = 0; p < kK; ++p) e += (double)x[i * kK + p] * (double)w[j * kK + p];
      CHECK(fabs((double)y[i * kN + j] - e) <= 1e-4 + 1e-5 * fabs(e));
    }
  }

  /* Errors: bits 5, another K, a corrupt header; y stays poisoned. */
  poison(y, kM * kN);
  CHECK_FAILS(tileops_quantize_weight(&wt, 5, group_size, 1, &qt, NULL), TILEOPS_INVALID_ARGUMENT,
              "bits");
  const int64_t x_short[] = {kM, kK / 2};
  const tileops_tensor xs = tensor(x, TILEOPS_FLOAT32, 2, x_short, NULL);
  CHECK_FAILS(tileops_linear_quantized(&xs, &qt, NULL, &yt, NULL), TILEOPS_INVALID_ARGUMENT,
              "input");
  q[0] ^= 1;
  CHECK_FAILS(tileops_linear_quantized(&xt, &qt, NULL, &yt, NULL), TILEOPS_INVALID_ARGUMENT,
              "qweight");
  CHECK(untouched(y, kM * kN));
  int64_t unused = 0;
  CHECK_FAILS(tileops_quantized_weight_bytes(kN, kK, 4, 0, 1, &unused), TILEOPS_INVALID_ARGUMENT,
              "group_size");
  free(q);
}

/* pack_quantized_codes: int4 codes with zero points, as a checkpoint holds them, give exactly
 * quantize_weight's buffer layout; linear_quantized then computes scale * (code - zero). */
static void check_packed_codes(void) {
  enum { kG = kK / 32 };
  uint8_t codes[kN * kK];
  float scales[kN * kG], zeros[kN * kG], w[kN * kK], x[kK], y[kN];
  for (int j = 0; j < kN * kG; ++j) {
    scales[j] = (float)(j + 1) / 16;
    zeros[j] = (float)(j % 17); /* 16 included: GPTQ v1's wrapped zero point */
  }
  for (int i = 0; i < kN * kK; ++i) {
    codes[i] = (uint8_t)((i * 7) % 16);
    w[i] = scales[i / 32] * ((float)codes[i] - zeros[i / 32]);
  }
  for (int p = 0; p < kK; ++p) x[p] = (float)cos(0.21 * (double)p);
  int64_t bytes = 0;
  CHECK_OK(tileops_quantized_weight_bytes(kN, kK, 4, 32, 0, &bytes));
  unsigned char* q = (unsigned char*)malloc((size_t)bytes);
  memset(q, 0xFF, (size_t)bytes);
  const int64_t c_shape[] = {kN, kK}, s_shape[] = {kN, kG}, q_shape[] = {bytes};
  const int64_t x_shape[] = {1, kK}, y_shape[] = {1, kN};
  const tileops_tensor ct = tensor(codes, TILEOPS_UINT8, 2, c_shape, NULL);
  const tileops_tensor st = tensor(scales, TILEOPS_FLOAT32, 2, s_shape, NULL);
  const tileops_tensor zt = tensor(zeros, TILEOPS_FLOAT32, 2, s_shape, NULL);
  const tileops_tensor qt = tensor(q, TILEOPS_UINT8, 1, q_shape, NULL);
  const tileops_tensor xt = tensor(x, TILEOPS_FLOAT32, 2, x_shape, NULL);
  const tileops_tensor yt = tensor(y, TILEOPS_FLOAT32, 2, y_shape, NULL);
  CHECK_OK(tileops_pack_quantized_codes(&ct, &st, &zt, 4, 32, &qt, NULL));
  poison(y, kN);
  CHECK_OK(tileops_linear_quantized(&xt, &qt, NULL, &yt, NULL));
  for (int j = 0; j < kN; ++j) {
    double e = 0;
    for (int p = 0; p < kK; ++p) e += (double)x[p] * (double)w[j * kK + p];
    CHECK(fabs((double)y[j] - e) <= 1e-4 + 1e-5 * fabs(e));
  }
  codes[9] = 16;
  CHECK_FAILS(tileops_pack_quantized_codes(&ct, &st, &zt, 4, 32, &qt, NULL),
              TILEOPS_INVALID_ARGUMENT, "codes");
  free(q);
}

int main(void) {
  check_format(8, 0, 1.0 / 128, 127);
  check_format(4, 32, 1.0 / 8, 7);
  check_packed_codes();
  return finish("c_api_quantized");
}
