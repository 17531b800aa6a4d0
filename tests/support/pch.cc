// The source of tileops_test_pch (tests/CMakeLists.txt): the precompiled header every test
// executable reuses is built with this target's flags. It links gtest_main and holds no test.
