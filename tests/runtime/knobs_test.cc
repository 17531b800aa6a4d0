// The knobs table: every variable tileops reads is listed, read through knob(), and validated.
#include "tileops/runtime/knobs.h"

#include <gtest/gtest.h>
#include <set>
#include <string>

#include "tests/support/scoped_env.h"
#include "tileops/core/error.h"

namespace tileops {
namespace {

using testing::ScopedEnv;

TEST(Knobs, TableNamesAreUniqueAndOurs) {
  std::set<std::string_view> names;
  for (const Knob& k : knobs()) {
    EXPECT_TRUE(names.insert(k.name).second) << k.name << " twice";
    EXPECT_EQ(k.name.substr(0, 8), "TILEOPS_") << k.name;
    EXPECT_FALSE(k.accepts.empty()) << k.name;
    EXPECT_FALSE(k.effect.empty()) << k.name;
  }
  EXPECT_TRUE(names.count("TILEOPS_NUM_THREADS"));
  EXPECT_TRUE(names.count("TILEOPS_SIMD_TARGET"));
}

TEST(Knobs, ReadsSetEmptyAndUnset) {
  {
    const ScopedEnv env("TILEOPS_TL_DUMP_DIR", "/tmp/x");
    EXPECT_EQ(knob("TILEOPS_TL_DUMP_DIR"), "/tmp/x");
  }
  {
    const ScopedEnv env("TILEOPS_TL_DUMP_DIR", "");
    EXPECT_EQ(knob("TILEOPS_TL_DUMP_DIR"), "");  // set and empty: TILEOPS_CXX= means "none"
  }
  const ScopedEnv env("TILEOPS_TL_DUMP_DIR", nullptr);
  EXPECT_EQ(knob("TILEOPS_TL_DUMP_DIR"), std::nullopt);
  EXPECT_NO_THROW(knob("PATH"));  // read, not owned
}

TEST(Knobs, UnlistedNameIsAnInternalError) {
  try {
    knob("TILEOPS_NO_SUCH_KNOB");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
    EXPECT_NE(std::string(e.what()).find("TILEOPS_NO_SUCH_KNOB"), std::string::npos);
  }
}

TEST(Knobs, IntegerKnobsAreValidated) {
  constexpr const char* kName = "TILEOPS_TL_STREAM_BYTES";
  {
    const ScopedEnv env(kName, nullptr);
    EXPECT_EQ(knob_integer(kName, 0, 100), std::nullopt);
  }
  {
    const ScopedEnv env(kName, "");
    EXPECT_EQ(knob_integer(kName, 0, 100), std::nullopt);
  }
  {
    const ScopedEnv env(kName, "42");
    EXPECT_EQ(knob_integer(kName, 0, 100), 42);
  }
  for (const char* bad : {"abc", "12x", "-1", "101", "99999999999999999999999", " 5"}) {
    const ScopedEnv env(kName, bad);
    try {
      knob_integer(kName, 0, 100);
      ADD_FAILURE() << "no error for '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string(kName) + "='" + bad + "'"), std::string::npos) << what;
      EXPECT_NE(what.find("[0, 100]"), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace tileops
