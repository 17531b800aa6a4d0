/* Checks and descriptor helpers shared by the C API test programs (one program per file; each
 * includes this once). */
#ifndef TILEOPS_TESTS_C_CHECK_H_
#define TILEOPS_TESTS_C_CHECK_H_

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tileops/c/tileops.h"

/* Unused helpers are fine: each program uses a different subset. */

static int g_failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                            \
    }                                                                          \
  } while (0)

/* The call returns `status` and, on failure, its message names argument 'arg'. */
#define CHECK_FAILS(call, status, arg)                                                            \
  do {                                                                                            \
    const tileops_status got_ = (call);                                                           \
    if (got_ != (status)) {                                                                       \
      fprintf(stderr, "%s:%d: %s returned %d, expected %d (%s)\n", __FILE__, __LINE__, #call,     \
              (int)got_, (int)(status), tileops_last_error());                                    \
      ++g_failures;                                                                               \
    } else if (!names_argument(arg)) {                                                            \
      fprintf(stderr, "%s:%d: message of %s does not name '%s': %s\n", __FILE__, __LINE__, #call, \
              arg, tileops_last_error());                                                         \
      ++g_failures;                                                                               \
    }                                                                                             \
  } while (0)

#define CHECK_OK(call)                                                                      \
  do {                                                                                      \
    const tileops_status got_ = (call);                                                     \
    if (got_ != TILEOPS_OK) {                                                               \
      fprintf(stderr, "%s:%d: %s returned %d (%s)\n", __FILE__, __LINE__, #call, (int)got_, \
              tileops_last_error());                                                        \
      ++g_failures;                                                                         \
    }                                                                                       \
  } while (0)

static inline int names_argument(const char* arg) {
  char quoted[64];
  snprintf(quoted, sizeof quoted, "'%s'", arg);
  return strstr(tileops_last_error(), quoted) != NULL;
}

static inline tileops_tensor tensor(void* data, tileops_dtype dtype, int32_t ndim,
                                    const int64_t* shape, const int64_t* strides) {
  tileops_tensor t;
  t.data = data;
  t.dtype = (int32_t)dtype;
  t.device_type = TILEOPS_DEVICE_CPU;
  t.device_index = 0;
  t.ndim = ndim;
  t.shape = shape;
  t.strides = strides;
  return t;
}

static inline void poison(float* data, size_t n) { memset(data, 0xFF, n * sizeof(float)); }

/* All n floats still carry the 0xFF poison. */
static inline int untouched(const float* data, size_t n) {
  const unsigned char* bytes = (const unsigned char*)data;
  for (size_t i = 0; i < n * sizeof(float); ++i) {
    if (bytes[i] != 0xFF) return 0;
  }
  return 1;
}

static inline int close_to(double actual, double expected) {
  return fabs(actual - expected) <= 1e-5 + 1e-5 * fabs(expected);
}

/* Ends a test program: prints the verdict and returns its exit status. */
static inline int finish(const char* program) {
  if (g_failures != 0) {
    fprintf(stderr, "%s: %d check(s) failed\n", program, g_failures);
    return 1;
  }
  printf("%s: all checks passed\n", program);
  return 0;
}

#endif /* TILEOPS_TESTS_C_CHECK_H_ */
