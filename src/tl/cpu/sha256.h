// SHA-256 (FIPS 180-4, section 6.2): the digest that binds a JIT cache entry to its key and to
// its object's bytes (disk_cache.cc). Written from the standard; checked against its examples.
#pragma once

#include <string>
#include <string_view>

namespace tileops::tl::cpu {

// The SHA-256 digest of `data` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

}  // namespace tileops::tl::cpu
