// expect_rejected: a bad call raises tileops::Error naming the argument and leaves the output
// untouched (every byte of its allocation, gaps included).
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"

namespace tileops::testing {

// Runs call(); expects an Error whose message names '<argument>' (and has `kind` when given),
// then checks that no byte of `out` changed.
template <typename Call>
void expect_rejected(Call&& call, const TensorStorage& out, const std::string& argument,
                     std::optional<ErrorKind> kind = std::nullopt) {
  const auto before = snapshot(out);
  try {
    call();
    ADD_FAILURE() << "no error raised for a bad '" << argument << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'" + argument + "'"), std::string::npos) << e.what();
    if (kind) {
      EXPECT_EQ(e.kind(), *kind) << e.what();
    }
  }
  EXPECT_EQ(snapshot(out), before) << "output written despite the error";
}

}  // namespace tileops::testing
