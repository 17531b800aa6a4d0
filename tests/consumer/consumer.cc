// rms_norm through the installed C++ headers, against a double reference.
#include <cmath>
#include <cstdio>
#include <vector>

#include "tileops/ops.h"
#include "tileops/runtime/cpu_info.h"

int main() {
  constexpr int kRows = 3, kWidth = 37;
  std::vector<float> x(kRows * kWidth), w(kWidth), y(kRows * kWidth, std::nanf(""));
  for (int i = 0; i < kRows * kWidth; ++i) x[i] = std::sin(0.3f * static_cast<float>(i));
  for (int i = 0; i < kWidth; ++i) w[i] = 0.5f + 0.01f * static_cast<float>(i);
  using tileops::DataType, tileops::Dims, tileops::Tensor;
  tileops::ops::rms_norm(Tensor(x.data(), Dims{kRows, kWidth}, DataType::kFloat32),
                         Tensor(w.data(), Dims{kWidth}, DataType::kFloat32), 1e-6,
                         Tensor(y.data(), Dims{kRows, kWidth}, DataType::kFloat32));
  for (int r = 0; r < kRows; ++r) {
    double squares = 0;
    for (int c = 0; c < kWidth; ++c) squares += double(x[r * kWidth + c]) * x[r * kWidth + c];
    const double scale = 1.0 / std::sqrt(squares / kWidth + 1e-6);
    for (int c = 0; c < kWidth; ++c) {
      const double expected = x[r * kWidth + c] * scale * w[c];
      if (!(std::fabs(y[r * kWidth + c] - expected) <= 1e-5 * (1 + std::fabs(expected)))) {
        std::printf("consumer_cpp: rms_norm row %d col %d: %g, expected %g\n", r, c,
                    y[r * kWidth + c], expected);
        return 1;
      }
    }
  }
  std::printf("consumer_cpp: tileops %s, rms_norm ok\n", tileops::version());
  return 0;
}
