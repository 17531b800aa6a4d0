// expect_rejected: a bad call raises tileops::Error of the given kind naming the argument (and
// mentioning every string in `details`), and leaves every output untouched (every byte of its
// allocation, gaps included).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"

namespace tileops::testing {

template <typename Call>
void expect_rejected(Call&& call, const std::vector<const TensorStorage*>& outputs,
                     const std::string& argument, ErrorKind kind = ErrorKind::kInvalidArgument,
                     const std::vector<std::string>& details = {}) {
  std::vector<std::vector<unsigned char>> before;
  for (const TensorStorage* t : outputs) before.push_back(snapshot(*t));
  try {
    call();
    ADD_FAILURE() << "no error raised for a bad '" << argument << "'";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("'" + argument + "'"), std::string::npos) << message;
    EXPECT_EQ(e.kind(), kind) << message;
    for (const std::string& detail : details) {
      EXPECT_NE(message.find(detail), std::string::npos) << "'" << detail << "' in " << message;
    }
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    EXPECT_EQ(snapshot(*outputs[i]), before[i]) << "output written despite the error";
  }
}

template <typename Call>
void expect_rejected(Call&& call, const TensorStorage& out, const std::string& argument,
                     ErrorKind kind = ErrorKind::kInvalidArgument,
                     const std::vector<std::string>& details = {}) {
  expect_rejected(std::forward<Call>(call), std::vector<const TensorStorage*>{&out}, argument, kind,
                  details);
}

}  // namespace tileops::testing
