#include "examples/llama/tokenizer.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "tileops/core/error.h"

namespace tileops::llama {
namespace {

// Context tokens decoded again before each new one: enough for SentencePiece's space rule and
// for a character spread over up to four byte tokens.
constexpr std::size_t kContextTokens = 6;

[[noreturn]] void fail(const std::string& message) {
  throw Error(ErrorKind::kInvalidArgument, message);
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path.string() + ": cannot open the file");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

nlohmann::json read_json(const std::filesystem::path& path) {
  try {
    return nlohmann::json::parse(read_text(path));
  } catch (const nlohmann::json::exception& e) {
    fail(path.string() + ": not valid JSON (" + e.what() + ")");
  }
}

std::int64_t checked_id(const nlohmann::json& value, const Tokenizer& tokenizer,
                        const std::string& where) {
  if (!value.is_number_integer() || value.get<std::int64_t>() < 0 ||
      value.get<std::int64_t>() >= tokenizer.vocab_size()) {
    fail(where + ": expected a token id in [0, " + std::to_string(tokenizer.vocab_size()) +
         "); got " + value.dump());
  }
  return value.get<std::int64_t>();
}

// tokenizer_config.json's add_bos_token, and config.json's eos_token_id (a number or a list).
void apply_checkpoint_settings(const std::filesystem::path& dir, Tokenizer& tokenizer) {
  const auto tokenizer_config = dir / "tokenizer_config.json";
  if (std::filesystem::exists(tokenizer_config)) {
    const nlohmann::json j = read_json(tokenizer_config);
    if (j.is_object() && j.contains("add_bos_token") && !j["add_bos_token"].is_null()) {
      if (!j["add_bos_token"].is_boolean()) {
        fail(tokenizer_config.string() + ": add_bos_token: expected true or false; got " +
             j["add_bos_token"].dump());
      }
      tokenizer.add_bos = j["add_bos_token"].get<bool>();
      if (tokenizer.add_bos && !tokenizer.bos) {
        fail(tokenizer_config.string() + ": add_bos_token is true but the " + tokenizer.describe() +
             " tokenizer names no BOS token");
      }
    }
  }
  const auto config = dir / "config.json";
  if (!std::filesystem::exists(config)) return;
  const nlohmann::json j = read_json(config);
  if (!j.is_object() || !j.contains("eos_token_id") || j["eos_token_id"].is_null()) return;
  const std::string where = config.string() + ": eos_token_id";
  const nlohmann::json& eos = j["eos_token_id"];
  tokenizer.eos.clear();
  if (eos.is_array()) {
    for (std::size_t i = 0; i < eos.size(); ++i) {
      tokenizer.eos.push_back(checked_id(eos[i], tokenizer, where + "[" + std::to_string(i) + "]"));
    }
  } else {
    tokenizer.eos.push_back(checked_id(eos, tokenizer, where));
  }
}

bool ends_incomplete(const std::string& text) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  return text.size() >= kReplacement.size() &&
         std::string_view(text).substr(text.size() - kReplacement.size()) == kReplacement;
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& dir_or_file) {
  const auto dir =
      std::filesystem::is_directory(dir_or_file) ? dir_or_file : dir_or_file.parent_path();
  const auto model = dir / "tokenizer.model", json = dir / "tokenizer.json";
  const bool has_model = std::filesystem::exists(model), has_json = std::filesystem::exists(json);
  std::unique_ptr<Tokenizer> tokenizer;
  if (has_model && (sentencepiece_available() || !has_json)) {
    if (!sentencepiece_available()) {
      fail(model.string() +
           ": this build reads no SentencePiece model (libsentencepiece-dev was "
           "not found at configure time; scripts/setup.sh installs it)");
    }
    try {
      tokenizer = load_sentencepiece(model);
    } catch (const Error&) {
      // Some Llama-3 repositories carry a tiktoken file under that name: tokenizer.json then.
      if (!has_json) throw;
    }
  }
  if (!tokenizer && has_json) {
    if (!tokenizer_json_available()) {
      fail(json.string() +
           ": this build reads no tokenizer.json (libicu-dev was not found at "
           "configure time; scripts/setup.sh installs it)");
    }
    tokenizer = parse_tokenizer_json(read_text(json), json.string());
  } else if (!tokenizer) {
    fail("no tokenizer.model or tokenizer.json in " + dir.string() +
         " (--prompt needs the checkpoint's tokenizer)");
  }
  apply_checkpoint_settings(dir, *tokenizer);
  return tokenizer;
}

TextStream::TextStream(const Tokenizer& tokenizer, std::span<const std::int64_t> context)
    : tokenizer_(tokenizer) {
  const std::size_t keep = std::min(context.size(), kContextTokens);
  ids_.assign(context.end() - static_cast<std::ptrdiff_t>(keep), context.end());
  read_ = ids_.size();
}

std::string TextStream::push(std::int64_t id) {
  ids_.push_back(id);
  const std::span<const std::int64_t> all(ids_);
  const std::string before = tokenizer_.decode(all.subspan(prefix_, read_ - prefix_));
  const std::string now = tokenizer_.decode(all.subspan(prefix_));
  if (now.size() <= before.size() || ends_incomplete(now)) return {};
  prefix_ = read_;
  read_ = ids_.size();
  return now.substr(before.size());
}

std::string TextStream::finish() {
  const std::span<const std::int64_t> all(ids_);
  const std::string before = tokenizer_.decode(all.subspan(prefix_, read_ - prefix_));
  const std::string now = tokenizer_.decode(all.subspan(prefix_));
  prefix_ = read_ = ids_.size();
  return now.size() > before.size() ? now.substr(before.size()) : std::string();
}

namespace {

// The length of the well-formed UTF-8 character at text[i], or 0 when it is not one; `maximal`
// gets the length of the maximal ill-formed subpart then (at least 1).
std::size_t utf8_char(std::string_view text, std::size_t i, std::size_t& maximal) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  maximal = 1;
  if (b < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the second byte's range
  if (b >= 0xC2 && b <= 0xDF) {
    length = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    length = 3;
    if (b == 0xE0) low = 0xA0;   // overlong
    if (b == 0xED) high = 0x9F;  // surrogates
  } else if (b >= 0xF0 && b <= 0xF4) {
    length = 4;
    if (b == 0xF0) low = 0x90;   // overlong
    if (b == 0xF4) high = 0x8F;  // > U+10FFFF
  } else {
    return 0;
  }
  for (std::size_t k = 1; k < length; ++k) {
    if (i + k >= text.size()) return 0;
    const unsigned char c = byte(i + k);
    if (k == 1 ? (c < low || c > high) : (c < 0x80 || c > 0xBF)) return 0;
    maximal = k + 1;
  }
  return length;
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  std::size_t maximal = 0;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_char(text, i, maximal);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t maximal = 0;
  for (std::size_t i = 0; i < bytes.size();) {
    const std::size_t n = utf8_char(bytes, i, maximal);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      i += maximal;
    } else {
      out.append(bytes.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace tileops::llama
