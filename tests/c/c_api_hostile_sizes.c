/* Hostile sizes and layouts through the C API: sizes beyond int64 are TILEOPS_INVALID_ARGUMENT
 * naming the argument (never a wrapped count that sizes a buffer), and an output whose elements
 * overlap each other is refused with nothing written. */
#include <stdint.h>

#include "check.h"

/* packed_linear_weight_numel once returned 0 for (2^40, 2^40) and a negative count for
 * (2^62, 3); pack_linear_weight then packed a broadcast [1, 2^60] weight into 0 elements. */
static void test_packed_sizes(void) {
  int64_t numel = -7;
  const int64_t big = (int64_t)1 << 40;
  CHECK_FAILS(tileops_packed_linear_weight_numel(big, big, TILEOPS_FLOAT32, &numel),
              TILEOPS_INVALID_ARGUMENT, "n");
  CHECK_FAILS(tileops_packed_linear_weight_numel((int64_t)1 << 62, 3, TILEOPS_FLOAT32, &numel),
              TILEOPS_INVALID_ARGUMENT, "k");
  CHECK_FAILS(tileops_packed_linear_weight_numel(INT64_MAX, 1, TILEOPS_FLOAT16, &numel),
              TILEOPS_INVALID_ARGUMENT, "n");
  CHECK(numel == -7);
  CHECK(strstr(tileops_last_error(), "overflows int64") != NULL);

  float one = 1.0f;
  float packed[64];
  poison(packed, 64);
  const int64_t w_shape[] = {1, (int64_t)1 << 60}, w_strides[] = {0, 0};
  const int64_t p_shape[] = {0};
  const tileops_tensor w = tensor(&one, TILEOPS_FLOAT32, 2, w_shape, w_strides);
  const tileops_tensor p = tensor(packed, TILEOPS_FLOAT32, 1, p_shape, NULL);
  CHECK_FAILS(tileops_pack_linear_weight(&w, &p, NULL), TILEOPS_INVALID_ARGUMENT, "weight");
  CHECK(strstr(tileops_last_error(), "pack_linear_weight") != NULL);
  CHECK(untouched(packed, 64));
}

/* A descriptor whose element count wraps ([2^32, 2^32] with stride 0 has 2^64 elements) or whose
 * contiguous strides would overflow is refused where it is imported, naming the argument. */
static void test_descriptor_sizes(void) {
  float x[4] = {1, 2, 3, 4};
  float y[4];
  poison(y, 4);
  const int64_t huge[] = {(int64_t)1 << 32, (int64_t)1 << 32}, zeros[] = {0, 0};
  const int64_t empty_huge[] = {0, (int64_t)1 << 40, (int64_t)1 << 40};
  const int64_t four[] = {4};
  const tileops_tensor wrapped = tensor(x, TILEOPS_FLOAT32, 2, huge, zeros);
  const tileops_tensor empty = tensor(x, TILEOPS_FLOAT32, 3, empty_huge, NULL);
  const tileops_tensor out = tensor(y, TILEOPS_FLOAT32, 1, four, NULL);
  CHECK_FAILS(tileops_add(&wrapped, &out, &out, NULL), TILEOPS_INVALID_ARGUMENT, "input");
  CHECK(strstr(tileops_last_error(), "add") != NULL);
  CHECK_FAILS(tileops_cast(&empty, &out, NULL), TILEOPS_INVALID_ARGUMENT, "input");
  CHECK(untouched(y, 4));
}

/* torch.empty(16).as_strided((4, 4), (1, 1)) as an output. */
static void test_self_overlapping_output(void) {
  float x[16], b[16], y[16];
  for (int i = 0; i < 16; ++i) x[i] = (float)i, b[i] = 1.0f;
  poison(y, 16);
  const int64_t shape[] = {4, 4}, overlapping[] = {1, 1};
  const tileops_tensor in = tensor(x, TILEOPS_FLOAT32, 2, shape, NULL);
  const tileops_tensor other = tensor(b, TILEOPS_FLOAT32, 2, shape, NULL);
  const tileops_tensor out = tensor(y, TILEOPS_FLOAT32, 2, shape, overlapping);
  CHECK_FAILS(tileops_add(&in, &other, &out, NULL), TILEOPS_INVALID_ARGUMENT, "out");
  CHECK(strstr(tileops_last_error(), "overlap") != NULL);
  CHECK_FAILS(tileops_cast(&in, &out, NULL), TILEOPS_INVALID_ARGUMENT, "out");
  CHECK_FAILS(tileops_matmul(&in, &other, &out, 0, 0, NULL), TILEOPS_INVALID_ARGUMENT, "c");
  CHECK(untouched(y, 16));
}

int main(void) {
  test_packed_sizes();
  test_descriptor_sizes();
  test_self_overlapping_output();
  return finish("c_api_hostile_sizes");
}
