/* The C API from plain C11: numeric results of rms_norm, cat and embedding (contiguous and
 * strided), an error of each kind per entry with its status and message, bad descriptors
 * (which must be reported, never crash), NULL contexts and tensors, the thread-local error
 * message and the global controls. Operators added to the C API after these live in
 * c_api_more_ops.c. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdlib.h>

#include "check.h"

static void test_rms_norm(void) {
  enum { kRows = 3, kWidth = 5, kPadded = 8 };
  float x[kRows * kPadded];
  float w[kWidth];
  float y[kRows * kPadded];
  const int64_t shape[] = {kRows, kWidth};
  const int64_t padded_strides[] = {kPadded, 1};
  const int64_t w_shape[] = {kWidth};
  for (int i = 0; i < kRows * kPadded; ++i) x[i] = (float)sin(0.7 * i);
  for (int i = 0; i < kWidth; ++i) w[i] = 0.5f + 0.25f * (float)i;

  /* Contiguous input (the first kRows * kWidth values), then a padded (strided) one. */
  for (int strided = 0; strided <= 1; ++strided) {
    const int64_t pitch = strided ? kPadded : kWidth;
    const tileops_tensor in = tensor(x, TILEOPS_FLOAT32, 2, shape, strided ? padded_strides : NULL);
    const tileops_tensor wt = tensor(w, TILEOPS_FLOAT32, 1, w_shape, NULL);
    const tileops_tensor out =
        tensor(y, TILEOPS_FLOAT32, 2, shape, strided ? padded_strides : NULL);
    poison(y, kRows * kPadded);
    CHECK_OK(tileops_rms_norm(&in, &wt, 1e-6, &out, NULL));
    for (int r = 0; r < kRows; ++r) {
      double sum = 0.0;
      for (int i = 0; i < kWidth; ++i) sum += (double)x[r * pitch + i] * x[r * pitch + i];
      const double scale = 1.0 / sqrt(sum / kWidth + 1e-6);
      for (int i = 0; i < kWidth; ++i) {
        CHECK(close_to(y[r * pitch + i], x[r * pitch + i] * scale * w[i]));
      }
    }
  }

  const tileops_tensor in = tensor(x, TILEOPS_FLOAT32, 2, shape, NULL);
  const tileops_tensor wt = tensor(w, TILEOPS_FLOAT32, 1, w_shape, NULL);
  const tileops_tensor out = tensor(y, TILEOPS_FLOAT32, 2, shape, NULL);
  tileops_context ctx = {NULL, 0};
  poison(y, kRows * kPadded);
  CHECK_OK(tileops_rms_norm(&in, &wt, 1e-6, &out, &ctx));
  CHECK(!untouched(y, kRows * kWidth));

  /* Errors: out of another dtype, a short weight, a negative eps, no implementation 7, NULL. */
  const tileops_tensor half_out = tensor(y, TILEOPS_FLOAT16, 2, shape, NULL);
  const int64_t short_shape[] = {kWidth - 1};
  const tileops_tensor short_w = tensor(w, TILEOPS_FLOAT32, 1, short_shape, NULL);
  poison(y, kRows * kPadded);
  CHECK_FAILS(tileops_rms_norm(&in, &wt, 1e-6, &half_out, NULL), TILEOPS_INVALID_TYPE, "out");
  CHECK_FAILS(tileops_rms_norm(&in, &short_w, 1e-6, &out, NULL), TILEOPS_INVALID_ARGUMENT,
              "weight");
  CHECK_FAILS(tileops_rms_norm(&in, &wt, -1.0, &out, NULL), TILEOPS_INVALID_ARGUMENT, "eps");
  ctx.implementation_index = 7;
  CHECK(tileops_rms_norm(&in, &wt, 1e-6, &out, &ctx) == TILEOPS_UNSUPPORTED);
  CHECK(strstr(tileops_last_error(), "rms_norm") != NULL);
  CHECK_FAILS(tileops_rms_norm(NULL, &wt, 1e-6, &out, NULL), TILEOPS_INVALID_ARGUMENT, "input");
  CHECK_FAILS(tileops_rms_norm(&in, &wt, 1e-6, NULL, NULL), TILEOPS_INVALID_ARGUMENT, "out");
  CHECK(untouched(y, kRows * kPadded));
}

static void test_cat(void) {
  float a[2 * 3] = {1, 2, 3, 4, 5, 6};
  float b[2 * 2] = {7, 8, 9, 10};
  float y[2 * 8];
  const int64_t a_shape[] = {2, 3};
  const int64_t b_shape[] = {2, 2};
  const int64_t y_shape[] = {2, 5};
  const int64_t y_padded[] = {8, 1};
  const float expected[2 * 5] = {1, 2, 3, 7, 8, 4, 5, 6, 9, 10};
  tileops_tensor inputs[2];
  inputs[0] = tensor(a, TILEOPS_FLOAT32, 2, a_shape, NULL);
  inputs[1] = tensor(b, TILEOPS_FLOAT32, 2, b_shape, NULL);

  for (int strided = 0; strided <= 1; ++strided) {
    const int64_t pitch = strided ? 8 : 5;
    const tileops_tensor out = tensor(y, TILEOPS_FLOAT32, 2, y_shape, strided ? y_padded : NULL);
    for (int32_t dim = -1; dim <= 1; dim += 2) { /* dims -1 and 1 */
      poison(y, 2 * 8);
      CHECK_OK(tileops_cat(inputs, 2, dim, &out, NULL));
      for (int r = 0; r < 2; ++r) {
        for (int c = 0; c < 5; ++c) CHECK(y[r * pitch + c] == expected[r * 5 + c]);
      }
    }
  }

  /* int32 along dim 0. */
  int32_t p[3] = {1, 2, 3};
  int32_t q[6] = {4, 5, 6, 7, 8, 9};
  int32_t z[9];
  const int64_t p_shape[] = {1, 3};
  const int64_t q_shape[] = {2, 3};
  const int64_t z_shape[] = {3, 3};
  tileops_tensor ints[2];
  ints[0] = tensor(p, TILEOPS_INT32, 2, p_shape, NULL);
  ints[1] = tensor(q, TILEOPS_INT32, 2, q_shape, NULL);
  const tileops_tensor z_out = tensor(z, TILEOPS_INT32, 2, z_shape, NULL);
  memset(z, 0xFF, sizeof z);
  CHECK_OK(tileops_cat(ints, 2, 0, &z_out, NULL));
  for (int i = 0; i < 9; ++i) CHECK(z[i] == i + 1);

  /* Errors: rows that differ, a dim out of range, no tensors, a NULL array, a bad element. */
  const tileops_tensor out = tensor(y, TILEOPS_FLOAT32, 2, y_shape, NULL);
  tileops_tensor mismatched[2];
  mismatched[0] = inputs[0];
  mismatched[1] = tensor(q, TILEOPS_FLOAT32, 2, (const int64_t[]){3, 2}, NULL);
  poison(y, 2 * 8);
  CHECK_FAILS(tileops_cat(mismatched, 2, 1, &out, NULL), TILEOPS_INVALID_ARGUMENT, "tensors[1]");
  CHECK_FAILS(tileops_cat(inputs, 2, 2, &out, NULL), TILEOPS_INVALID_ARGUMENT, "dim");
  CHECK_FAILS(tileops_cat(inputs, 0, 1, &out, NULL), TILEOPS_INVALID_ARGUMENT, "tensors");
  CHECK_FAILS(tileops_cat(NULL, 2, 1, &out, NULL), TILEOPS_INVALID_ARGUMENT, "tensors");
  mismatched[1] = tensor(b, TILEOPS_INT32, 2, b_shape, NULL);
  CHECK_FAILS(tileops_cat(mismatched, 2, 1, &out, NULL), TILEOPS_INVALID_TYPE, "tensors[1]");
  mismatched[1] = tensor(b, TILEOPS_FLOAT32, 2, NULL, NULL);
  CHECK_FAILS(tileops_cat(mismatched, 2, 1, &out, NULL), TILEOPS_INVALID_ARGUMENT, "tensors[1]");
  CHECK_FAILS(tileops_cat(inputs, 2, 1, NULL, NULL), TILEOPS_INVALID_ARGUMENT, "out");
  /* A garbage count (an uninitialised size_t) is the caller's error, named. */
  CHECK_FAILS(tileops_cat(inputs, (size_t)-1, 1, &out, NULL), TILEOPS_INVALID_ARGUMENT,
              "num_tensors");
  CHECK(untouched(y, 2 * 8));
}

static void test_embedding(void) {
  float w[4 * 3];
  float y[5 * 3];
  const int64_t w_shape[] = {4, 3};
  const int64_t ids_shape[] = {5};
  const int64_t y_shape[] = {5, 3};
  for (int i = 0; i < 4 * 3; ++i) w[i] = (float)(i * 10);
  int64_t ids64[5] = {3, 0, 2, 2, 1};
  int32_t ids32[5] = {3, 0, 2, 2, 1};
  const tileops_tensor weight = tensor(w, TILEOPS_FLOAT32, 2, w_shape, NULL);
  const tileops_tensor out = tensor(y, TILEOPS_FLOAT32, 2, y_shape, NULL);

  for (int wide = 0; wide <= 1; ++wide) {
    const tileops_tensor ids = wide ? tensor(ids64, TILEOPS_INT64, 1, ids_shape, NULL)
                                    : tensor(ids32, TILEOPS_INT32, 1, ids_shape, NULL);
    poison(y, 5 * 3);
    CHECK_OK(tileops_embedding(&ids, &weight, &out, NULL));
    for (int i = 0; i < 5; ++i) {
      for (int c = 0; c < 3; ++c) CHECK(y[i * 3 + c] == w[ids64[i] * 3 + c]);
    }
  }

  /* Errors: an id past the table (and a negative one) with nothing written, float ids, a
   * rank-1 weight, an out of another shape, NULL weight. */
  const tileops_tensor ids = tensor(ids64, TILEOPS_INT64, 1, ids_shape, NULL);
  poison(y, 5 * 3);
  ids64[4] = 4;
  CHECK_FAILS(tileops_embedding(&ids, &weight, &out, NULL), TILEOPS_INVALID_ARGUMENT, "input_ids");
  CHECK(strstr(tileops_last_error(), "id 4") != NULL);
  ids64[4] = -2;
  CHECK_FAILS(tileops_embedding(&ids, &weight, &out, NULL), TILEOPS_INVALID_ARGUMENT, "input_ids");
  CHECK(strstr(tileops_last_error(), "id -2") != NULL);
  ids64[4] = 1;
  const tileops_tensor float_ids = tensor(w, TILEOPS_FLOAT32, 1, ids_shape, NULL);
  CHECK_FAILS(tileops_embedding(&float_ids, &weight, &out, NULL), TILEOPS_INVALID_TYPE,
              "input_ids");
  const int64_t flat_shape[] = {12};
  const tileops_tensor flat_weight = tensor(w, TILEOPS_FLOAT32, 1, flat_shape, NULL);
  CHECK_FAILS(tileops_embedding(&ids, &flat_weight, &out, NULL), TILEOPS_INVALID_ARGUMENT,
              "weight");
  const tileops_tensor short_out = tensor(y, TILEOPS_FLOAT32, 2, w_shape, NULL);
  CHECK_FAILS(tileops_embedding(&ids, &weight, &short_out, NULL), TILEOPS_INVALID_ARGUMENT, "out");
  CHECK_FAILS(tileops_embedding(&ids, NULL, &out, NULL), TILEOPS_INVALID_ARGUMENT, "weight");
  CHECK(untouched(y, 5 * 3));
}

/* Malformed descriptors are reported as invalid arguments naming the tensor. */
static void test_bad_descriptors(void) {
  float x[8];
  float w[4];
  float y[8];
  const int64_t shape[] = {2, 4};
  const int64_t w_shape[] = {4};
  const int64_t negative_extent[] = {2, -4};
  const int64_t negative_strides[] = {4, -1};
  const int64_t huge_shape[] = {INT64_MAX / 2, 4};
  const int64_t huge_strides[] = {INT64_MAX / 2, 1};
  const int64_t nine[] = {1, 1, 1, 1, 1, 1, 1, 1, 4};
  const tileops_tensor wt = tensor(w, TILEOPS_FLOAT32, 1, w_shape, NULL);
  const tileops_tensor out = tensor(y, TILEOPS_FLOAT32, 2, shape, NULL);
  tileops_tensor in = tensor(x, TILEOPS_FLOAT32, 2, shape, NULL);
  poison(y, 8);

  in.dtype = 99;
  CHECK_FAILS(tileops_rms_norm(&in, &wt, 1e-6, &out, NULL), TILEOPS_INVALID_ARGUMENT, "input");
  in.dtype = -1;
  CHECK_FAILS(tileops_rms_norm(&in, &wt, 1e-6, &out, NULL), TILEOPS_INVALID_ARGUMENT, "input");
  in = tensor(x, TILEOPS_FLOAT32, -1, shape, NULL);
  CHECK_FAILS(tileops_rms_norm(&in, &wt, 1e-6, &out, NULL), TILEOPS_INVALID_ARGUMENT, "input");
  in = tensor(x, TILEOPS_FLOAT32, 9, nine, NULL);
  CHECK_FAILS(tileops_rms_norm(&in, &wt, 1e-6, &out, NULL), TILEOPS_INVALID_ARGUMENT, "input");
  in = tensor(x, TILEOPS_FLOAT32, 2, NULL, NULL);
  CHECK_FAILS(tileops_rms_norm(&in, &wt, 1e-6, &out, NULL), TILEOPS_INVALID_ARGUMENT, "input");
  in = tensor(x, TILEOPS_FLOAT32, 2, negative_extent, NULL);
  CHECK_FAILS(tileops_rms_norm(&in, &wt, 1e-6, &out, NULL), TILEOPS_INVALID_ARGUMENT, "input");
  in = tensor(x, TILEOPS_FLOAT32, 2, shape, negative_strides);
  CHECK_FAILS(tileops_rms_norm(&in, &wt, 1e-6, &out, NULL), TILEOPS_INVALID_ARGUMENT, "input");
  in = tensor(x, TILEOPS_FLOAT32, 2, huge_shape, NULL);
  CHECK_FAILS(tileops_rms_norm(&in, &wt, 1e-6, &out, NULL), TILEOPS_INVALID_ARGUMENT, "input");
  in = tensor(x, TILEOPS_FLOAT32, 2, shape, huge_strides);
  CHECK_FAILS(tileops_rms_norm(&in, &wt, 1e-6, &out, NULL), TILEOPS_INVALID_ARGUMENT, "input");
  in = tensor(NULL, TILEOPS_FLOAT32, 2, shape, NULL);
  CHECK_FAILS(tileops_rms_norm(&in, &wt, 1e-6, &out, NULL), TILEOPS_INVALID_ARGUMENT, "input");
  in = tensor(x, TILEOPS_FLOAT32, 2, shape, NULL);
  in.device_type = 7;
  CHECK_FAILS(tileops_rms_norm(&in, &wt, 1e-6, &out, NULL), TILEOPS_INVALID_ARGUMENT, "input");
  in.device_type = TILEOPS_DEVICE_CPU;
  in.device_index = -1;
  CHECK_FAILS(tileops_rms_norm(&in, &wt, 1e-6, &out, NULL), TILEOPS_INVALID_ARGUMENT, "input");
  /* A well-formed CUDA tensor is a valid request this CPU-only build cannot serve. */
  in.device_type = TILEOPS_DEVICE_CUDA;
  in.device_index = 0;
  CHECK_FAILS(tileops_rms_norm(&in, &wt, 1e-6, &out, NULL), TILEOPS_UNSUPPORTED, "input");
  CHECK(untouched(y, 8));

  /* Rank 0 and empty tensors are fine descriptors (NULL shape and data allowed). */
  const tileops_tensor scalar = tensor(x, TILEOPS_FLOAT32, 0, NULL, NULL);
  const tileops_tensor scalars[] = {scalar};
  CHECK_FAILS(tileops_cat(scalars, 1, 0, &scalar, NULL), TILEOPS_INVALID_ARGUMENT, "tensors[0]");
  const int64_t empty_shape[] = {0, 4};
  const tileops_tensor empty = tensor(NULL, TILEOPS_FLOAT32, 2, empty_shape, NULL);
  CHECK_OK(tileops_rms_norm(&empty, &wt, 1e-6, &empty, NULL));
  /* An empty output's zero strides (row-major strides of a [3, 0]) write nothing twice. */
  const int64_t empty_cols[] = {3, 0}, empty_strides[] = {0, 1};
  const tileops_tensor empty_out = tensor(NULL, TILEOPS_FLOAT32, 2, empty_cols, empty_strides);
  CHECK_OK(tileops_add(&empty_out, &empty_out, &empty_out, NULL));
  /* Arguments are checked in order: a bad 'a' is reported before a missing 'c'. */
  in = tensor(x, TILEOPS_FLOAT32, 2, shape, NULL);
  in.dtype = 99;
  CHECK_FAILS(tileops_gemm(&in, &in, 1.0, 0.0, 0, 1, NULL, NULL), TILEOPS_INVALID_ARGUMENT, "a");
  CHECK_FAILS(tileops_matmul(&in, &in, NULL, 0, 1, NULL), TILEOPS_INVALID_ARGUMENT, "a");
}

static void* fail_on_another_thread(void* unused) {
  (void)unused;
  tileops_set_num_threads(-3);
  return NULL;
}

static void test_errors_are_per_thread_and_controls(void) {
  CHECK_FAILS(tileops_set_num_threads(0), TILEOPS_INVALID_ARGUMENT, "num_threads");
  const char* before = tileops_last_error();
  CHECK(strstr(before, "got 0") != NULL);
  pthread_t other;
  CHECK(pthread_create(&other, NULL, fail_on_another_thread, NULL) == 0);
  CHECK(pthread_join(other, NULL) == 0);
  CHECK(strstr(tileops_last_error(), "got 0") != NULL); /* not the other thread's "got -3" */

  CHECK_OK(tileops_set_num_threads(2));
  CHECK_OK(tileops_clear_cache());
  /* A success leaves the last failure's message in place. */
  CHECK(strstr(tileops_last_error(), "got 0") != NULL);
  test_rms_norm(); /* still correct on the new pool with an empty cache */
}

/* A tile-language implementation whose kernel cannot be built reports TILEOPS_COMPILE_ERROR with
 * the compiler's complaint, and builds once the cause is gone. */
static void test_compile_error(void) {
  float x[2 * 64], w[64], y[2 * 64];
  for (int i = 0; i < 2 * 64; ++i) x[i] = (float)(i % 7) - 3.0f;
  for (int i = 0; i < 64; ++i) w[i] = 1.0f;
  const int64_t shape[] = {2, 64};
  const int64_t w_shape[] = {64};
  const tileops_tensor in = tensor(x, TILEOPS_FLOAT32, 2, shape, NULL);
  const tileops_tensor wt = tensor(w, TILEOPS_FLOAT32, 1, w_shape, NULL);
  const tileops_tensor out = tensor(y, TILEOPS_FLOAT32, 2, shape, NULL);
  tileops_context tl = {NULL, 1}; /* implementation 1: the tile-language rms_norm */
  const char* before = getenv("TILEOPS_TL_TARGET");
  char saved[256] = "";
  if (before != NULL) snprintf(saved, sizeof saved, "%s", before);
  setenv("TILEOPS_TL_TARGET", "no-such-cpu", 1);
  CHECK(tileops_rms_norm(&in, &wt, 1e-6, &out, &tl) == TILEOPS_COMPILE_ERROR);
  CHECK(strstr(tileops_last_error(), "no-such-cpu") != NULL);
  if (before != NULL) {
    setenv("TILEOPS_TL_TARGET", saved, 1);
  } else {
    unsetenv("TILEOPS_TL_TARGET");
  }
  CHECK_OK(tileops_rms_norm(&in, &wt, 1e-6, &out, &tl));
}

int main(void) {
  test_compile_error(); /* first: no tile-language kernel is built in this process yet */
  test_rms_norm();
  test_cat();
  test_embedding();
  test_bad_descriptors();
  test_errors_are_per_thread_and_controls();
  return finish("c_api_test");
}
