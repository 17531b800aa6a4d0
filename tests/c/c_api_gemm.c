/* The C API entries of gemm, matmul and linear from plain C11: results against double
 * references written here, transposes, alpha/beta, a NULL bias, errors naming the argument with
 * outputs untouched, and the implementation index. */
#include <stdint.h>

#include "check.h"

static void fill(float* data, size_t n, double step) {
  for (size_t i = 0; i < n; ++i) data[i] = (float)sin(step * (double)(i + 1));
}

/* c[i][j] = sum_p a[i*k+p] * b[p*n+j] */
static double dot(const float* a, const float* b, int i, int j, int n, int k) {
  double sum = 0.0;
  for (int p = 0; p < k; ++p) sum += (double)a[i * k + p] * (double)b[p * n + j];
  return sum;
}

static void test_gemm(void) {
  enum { M = 5, N = 7, K = 9 };
  float a[M * K], b[K * N], c[M * N], c0[M * N];
  const int64_t a_shape[] = {M, K}, b_shape[] = {K, N}, c_shape[] = {M, N};
  const int64_t at_shape[] = {K, M}, at_strides[] = {1, K}; /* a viewed transposed */
  fill(a, M * K, 0.7);
  fill(b, K * N, 1.3);
  fill(c0, M * N, 0.4);
  const tileops_tensor ta = tensor(a, TILEOPS_FLOAT32, 2, a_shape, NULL);
  const tileops_tensor tat = tensor(a, TILEOPS_FLOAT32, 2, at_shape, at_strides);
  const tileops_tensor tb = tensor(b, TILEOPS_FLOAT32, 2, b_shape, NULL);
  const tileops_tensor tc = tensor(c, TILEOPS_FLOAT32, 2, c_shape, NULL);

  memcpy(c, c0, sizeof c);
  CHECK_OK(tileops_gemm(&ta, &tb, 2.0, 0.5, 0, 0, &tc, NULL));
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j)
      CHECK(close_to(c[i * N + j], 2.0 * dot(a, b, i, j, N, K) + 0.5 * c0[i * N + j]));
  }
  /* op(at) = a: same product through trans_a, with every implementation index 0. */
  poison(c, M * N);
  const tileops_context ctx = {NULL, 0};
  CHECK_OK(tileops_matmul(&tat, &tb, &tc, 1, 0, &ctx));
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) CHECK(close_to(c[i * N + j], dot(a, b, i, j, N, K)));
  }
  /* Errors: K mismatch (b as a), a bad implementation index. */
  poison(c, M * N);
  CHECK_FAILS(tileops_gemm(&ta, &ta, 1.0, 0.0, 0, 0, &tc, NULL), TILEOPS_INVALID_ARGUMENT, "b");
  CHECK_FAILS(tileops_matmul(&ta, &tb, NULL, 0, 0, NULL), TILEOPS_INVALID_ARGUMENT, "c");
  const tileops_context bad_index = {NULL, 99};
  CHECK(tileops_matmul(&ta, &tb, &tc, 0, 0, &bad_index) == TILEOPS_UNSUPPORTED);
  CHECK(untouched(c, M * N));
}

static void test_linear(void) {
  enum { M = 3, N = 4, K = 6 };
  float x[M * K], w[N * K], bias[N], y[M * N];
  const int64_t x_shape[] = {M, K}, w_shape[] = {N, K}, b_shape[] = {N}, y_shape[] = {M, N};
  fill(x, M * K, 0.3);
  fill(w, N * K, 0.9);
  fill(bias, N, 2.1);
  const tileops_tensor tx = tensor(x, TILEOPS_FLOAT32, 2, x_shape, NULL);
  const tileops_tensor tw = tensor(w, TILEOPS_FLOAT32, 2, w_shape, NULL);
  const tileops_tensor tbias = tensor(bias, TILEOPS_FLOAT32, 1, b_shape, NULL);
  const tileops_tensor ty = tensor(y, TILEOPS_FLOAT32, 2, y_shape, NULL);
  poison(y, M * N);
  CHECK_OK(tileops_linear(&tx, &tw, &tbias, &ty, NULL));
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      double sum = bias[j];
      for (int p = 0; p < K; ++p) sum += (double)x[i * K + p] * (double)w[j * K + p];
      CHECK(close_to(y[i * N + j], sum));
    }
  }
  poison(y, M * N);
  CHECK_OK(tileops_linear(&tx, &tw, NULL, &ty, NULL));
  for (int j = 0; j < N; ++j) {
    double sum = 0.0;
    for (int p = 0; p < K; ++p) sum += (double)x[p] * (double)w[j * K + p];
    CHECK(close_to(y[j], sum));
  }
  poison(y, M * N);
  CHECK_FAILS(tileops_linear(&tx, &ty, NULL, &ty, NULL), TILEOPS_INVALID_ARGUMENT, "weight");
  CHECK_FAILS(tileops_linear(&tx, &tw, &tx, &ty, NULL), TILEOPS_INVALID_ARGUMENT, "bias");
  CHECK(untouched(y, M * N));
}

/* The packed weight: its size, the pack, linear_packed against double sums (N = 20 pads to 32
 * rows, K = 7 is odd), and a packed buffer of the wrong size. */
static void test_linear_packed(void) {
  enum { M = 2, N = 20, K = 7 };
  float x[M * K], w[N * K], y[M * N], packed[32 * K];
  int64_t numel = 0;
  CHECK_OK(tileops_packed_linear_weight_numel(N, K, TILEOPS_FLOAT32, &numel));
  CHECK(numel == 32 * K);
  CHECK_FAILS(tileops_packed_linear_weight_numel(N, K, TILEOPS_FLOAT32, NULL),
              TILEOPS_INVALID_ARGUMENT, "numel");
  int32_t pays = -1;
  CHECK_OK(tileops_linear_packing_pays(TILEOPS_FLOAT32, &pays));
  CHECK(pays == 1);
  CHECK_OK(tileops_linear_packing_pays(TILEOPS_BFLOAT16, &pays));
  CHECK(pays == 0 || pays == 1);
  CHECK_FAILS(tileops_linear_packing_pays(TILEOPS_INT8, &pays), TILEOPS_INVALID_ARGUMENT, "dtype");
  CHECK_FAILS(tileops_linear_packing_pays(99, &pays), TILEOPS_INVALID_ARGUMENT, "dtype");
  CHECK_FAILS(tileops_linear_packing_pays(TILEOPS_FLOAT32, NULL), TILEOPS_INVALID_ARGUMENT, "pays");
  const int64_t x_shape[] = {M, K}, w_shape[] = {N, K}, p_shape[] = {32 * K}, y_shape[] = {M, N};
  const int64_t short_shape[] = {32 * K - 1};
  fill(x, M * K, 0.3);
  fill(w, N * K, 0.9);
  poison(packed, 32 * K);
  const tileops_tensor tx = tensor(x, TILEOPS_FLOAT32, 2, x_shape, NULL);
  const tileops_tensor tw = tensor(w, TILEOPS_FLOAT32, 2, w_shape, NULL);
  const tileops_tensor tp = tensor(packed, TILEOPS_FLOAT32, 1, p_shape, NULL);
  const tileops_tensor tshort = tensor(packed, TILEOPS_FLOAT32, 1, short_shape, NULL);
  const tileops_tensor ty = tensor(y, TILEOPS_FLOAT32, 2, y_shape, NULL);
  CHECK_OK(tileops_pack_linear_weight(&tw, &tp, NULL));
  poison(y, M * N);
  CHECK_OK(tileops_linear_packed(&tx, &tp, NULL, &ty, NULL));
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      double sum = 0.0;
      for (int p = 0; p < K; ++p) sum += (double)x[i * K + p] * (double)w[j * K + p];
      CHECK(close_to(y[i * N + j], sum));
    }
  }
  poison(y, M * N);
  CHECK_FAILS(tileops_linear_packed(&tx, &tshort, NULL, &ty, NULL), TILEOPS_INVALID_ARGUMENT,
              "packed");
  CHECK(untouched(y, M * N));
}

int main(void) {
  test_gemm();
  test_linear();
  test_linear_packed();
  return finish("c_api_gemm");
}
