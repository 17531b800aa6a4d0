/* add through the installed C API header, from C; the version and an error message. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tileops/c/tileops.h"

static tileops_tensor tensor(float* data, int ndim, const int64_t* shape) {
  tileops_tensor t;
  memset(&t, 0, sizeof t);
  t.data = data, t.dtype = TILEOPS_FLOAT32, t.device_type = TILEOPS_DEVICE_CPU;
  t.ndim = ndim, t.shape = shape, t.strides = NULL;
  return t;
}

int main(void) {
  float a[10], b[10], out[10];
  for (int i = 0; i < 10; ++i) a[i] = (float)i * 0.5f, b[i] = 1.0f - (float)i, out[i] = NAN;
  const int64_t shape[] = {10}, short_shape[] = {9};
  const tileops_tensor ta = tensor(a, 1, shape), tb = tensor(b, 1, shape);
  const tileops_tensor to = tensor(out, 1, shape), bad = tensor(out, 1, short_shape);
  if (tileops_add(&ta, &tb, &to, NULL) != TILEOPS_OK) {
    printf("consumer_c: add failed: %s\n", tileops_last_error());
    return 1;
  }
  for (int i = 0; i < 10; ++i) {
    if (out[i] != a[i] + b[i]) {
      printf("consumer_c: add element %d: %g, expected %g\n", i, out[i], a[i] + b[i]);
      return 1;
    }
  }
  if (tileops_add(&ta, &tb, &bad, NULL) == TILEOPS_OK || !strstr(tileops_last_error(), "out")) {
    printf("consumer_c: a wrong out shape was not refused by name: '%s'\n", tileops_last_error());
    return 1;
  }
  printf("consumer_c: tileops %s, add ok\n", tileops_version());
  return 0;
}
