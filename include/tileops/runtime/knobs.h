// Every environment variable tileops reads, in one table that says what each accepts and does.
// knob() is the only reader (a test refuses getenv anywhere else), so `tileops env` lists them
// all and a new one cannot be read without being documented here.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tileops {

struct Knob {
  std::string_view name;
  std::string_view accepts;
  std::string_view effect;
};

// tileops' own variables, in the order `tileops env` prints them.
std::span<const Knob> knobs();

// The value of a variable of knobs(), or of one tileops reads but does not own (PATH, HOME,
// PYTHONPATH): nullopt when unset, the text (possibly empty) when set. Callers validate it.
// Throws kInternal for any other name: every variable read is listed.
std::optional<std::string> knob(std::string_view name);

// A whole-number knob within [lo, hi], nullopt when unset or empty; kInvalidArgument naming the
// variable, the value and the range otherwise.
std::optional<long long> knob_integer(std::string_view name, long long lo, long long hi);

}  // namespace tileops
