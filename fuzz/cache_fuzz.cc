// The JIT cache's metadata check (entry_metadata_matches, src/tl/cpu/disk_cache.h): untrusted
// metadata bytes against a key and an object. The metadata is the fuzzed bytes, or the genuine
// metadata of the key and object with a fuzzed edit (so that the digest comparison is reached).
// It must never crash, must accept exactly entry_metadata(key, object) for a non-empty ELF
// object, and nothing else.
#include <cstdint>
#include <string>

#include "fuzz/fuzz_input.h"
#include "fuzz/fuzz_tensors.h"
#include "src/tl/cpu/disk_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tileops::fuzz;
  FuzzInput in(data, size);
  const int mode = in.below(4);
  const std::size_t key_size = in.byte(), object_size = in.byte() * 4u;
  std::string key, object;
  for (std::size_t i = 0; i < key_size && !in.empty(); ++i) key += static_cast<char>(in.byte());
  if (in.below(4) != 3)
    object =
        "\x7f"
        "ELF";
  for (std::size_t i = 0; i < object_size && !in.empty(); ++i) {
    object += static_cast<char>(in.byte());
  }
  std::string metadata;
  if (mode == 0) {
    metadata = std::string(in.rest());
  } else {
    metadata = tileops::tl::cpu::entry_metadata(key, object);
    if (mode >= 2 && !metadata.empty()) {  // one edit: replace, insert or erase a byte
      const std::size_t at = in.value<std::uint16_t>() % metadata.size();
      const char c = static_cast<char>(in.byte());
      if (mode == 2) metadata[at] = c;
      if (mode == 3) metadata.insert(metadata.begin() + static_cast<std::ptrdiff_t>(at), c);
      if (in.flag()) metadata.erase(at, 1);
    }
  }
  const bool genuine = metadata == tileops::tl::cpu::entry_metadata(key, object);
  const bool elf = object.size() > 4 && object.compare(0, 4,
                                                       "\x7f"
                                                       "ELF") == 0;
  const bool matches = tileops::tl::cpu::entry_metadata_matches(metadata, key, object);
  if (matches && !genuine) finding("cache metadata accepted for another key or object", key);
  if (genuine && elf && metadata.size() <= 4096 && !matches) {
    finding("cache metadata refused for its own key and object", key);
  }
  return 0;
}
