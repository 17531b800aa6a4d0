// Exact reads of JSON integers for the checkpoint readers: nlohmann's get<std::int64_t>() wraps
// an unsigned value above 2^63 - 1 to a negative one and truncates a float, so neither is used
// on untrusted input.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace tileops::llama {

// The value when `v` is a JSON integer that fits int64, else nullopt (floats, strings, ...).
inline std::optional<std::int64_t> json_int64(const nlohmann::json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return std::nullopt;
    }
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<std::int64_t>();
  return std::nullopt;
}

// A short description of a JSON value for error messages: its text, cut at 40 characters.
inline std::string json_excerpt(const nlohmann::json& v) {
  std::string text = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

}  // namespace tileops::llama
