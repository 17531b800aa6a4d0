// Hugging Face `tokenizer.json` byte-level BPE (GPT-2's scheme, as Llama-3 and Qwen2 ship it):
// added tokens are split off first (leftmost, longest), the rest is normalized (NFC/NFKC/NFD/
// NFKD through ICU), pre-tokenized (regex Split and ByteLevel steps in the file's order, with
// ICU's regex engine), each piece's bytes are mapped to GPT-2's printable characters and merged
// by rank. Decoding maps the characters back to bytes. Formats it does not implement
// (SentencePiece-style metaspace/byte fallback, WordPiece, other pre-tokenizers) are refused.
#include <array>
#include <memory>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "examples/llama/tokenizer.h"
#include "tileops/core/error.h"

#if TILEOPS_HAVE_ICU
#include <unicode/normalizer2.h>
#include <unicode/regex.h>
#include <unicode/unistr.h>
#endif

namespace tileops::llama {

#if TILEOPS_HAVE_ICU

namespace {

using nlohmann::json;

constexpr std::int64_t kMaxTokenId = std::int64_t{1} << 24;

// The code point of the UTF-8 character at s[i] (s is valid UTF-8); advances i.
char32_t next_code_point(std::string_view s, std::size_t& i) {
  const auto b = static_cast<unsigned char>(s[i]);
  const std::size_t n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
  char32_t c = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
  for (std::size_t k = 1; k < n; ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += n;
  return c;
}

std::string to_utf8(char32_t c) {
  std::string s;
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
  return s;
}

// GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the others (controls,
// space, 0x7F-0xA0, 0xAD) become U+0100 + their rank among them, so every byte is a visible
// character that no pre-tokenizer splits.
std::array<char32_t, 256> byte_level_alphabet() {
  std::array<char32_t, 256> map{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    map[b] = printable ? static_cast<char32_t>(b) : next++;
  }
  return map;
}

struct PreStep {
  std::unique_ptr<icu::RegexPattern> split;  // a Split step (Isolated); null: ByteLevel
  bool add_prefix_space = false;             // ByteLevel
};

struct AddedToken {
  std::string content;
  std::int64_t id = 0;
  bool special = false;
};

class BpeTokenizer final : public Tokenizer {
 public:
  BpeTokenizer(std::string_view text, std::string file);

  std::vector<std::int64_t> encode(std::string_view text) const override;
  std::string decode(std::span<const std::int64_t> ids) const override;
  std::int64_t vocab_size() const override { return static_cast<std::int64_t>(tokens_.size()); }
  std::string describe() const override { return "byte-level BPE"; }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw Error(ErrorKind::kInvalidArgument, file_ + ": " + where + ": " + what);
  }
  std::unique_ptr<icu::RegexPattern> compile(const std::string& where, const std::string& pattern,
                                             bool literal) const;
  void parse_normalizer(const json& j, const std::string& where);
  void parse_pre_tokenizer(const json& j, const std::string& where);
  void parse_model(const json& j);
  void parse_added_tokens(const json& j);
  void parse_post_processor(const json& j, const std::string& where);
  void parse_decoder(const json& j, const std::string& where);
  std::int64_t token_id(const std::string& token, const std::string& where) const;

  std::vector<std::string> pre_tokenize(std::string text) const;
  void merge(const std::string& word, std::vector<std::int64_t>& ids) const;

  std::string file_;
  std::array<std::string, 256> byte_chars_;        // byte -> its character (UTF-8)
  std::unordered_map<char32_t, char> char_bytes_;  // and back
  std::vector<const icu::Normalizer2*> normalizers_;
  std::vector<PreStep> steps_;
  std::unordered_map<std::string, std::int64_t> vocab_;
  std::unordered_map<std::uint64_t, std::pair<std::int64_t, std::int64_t>> merges_;  // rank, id
  bool ignore_merges_ = false;
  std::vector<AddedToken> added_;  // longest first
  std::vector<std::string> tokens_;
  std::vector<char> special_;  // per id: decodes to nothing
};

const json& field(const json& j, const char* name) {
  static const json null;
  return j.is_object() && j.contains(name) ? j[name] : null;
}

std::string type_of(const json& j) {
  const json& t = field(j, "type");
  return t.is_string() ? t.get<std::string>() : std::string();
}

bool flag(const json& j, const char* name) {
  const json& v = field(j, name);
  return v.is_boolean() && v.get<bool>();
}

BpeTokenizer::BpeTokenizer(std::string_view text, std::string file) : file_(std::move(file)) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(ErrorKind::kInvalidArgument, file_ + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) fail("the file", "expected a JSON object");
  const auto alphabet = byte_level_alphabet();
  for (int b = 0; b < 256; ++b) {
    byte_chars_[b] = to_utf8(alphabet[b]);
    char_bytes_[alphabet[b]] = static_cast<char>(b);
  }
  parse_model(field(j, "model"));
  parse_added_tokens(field(j, "added_tokens"));
  parse_normalizer(field(j, "normalizer"), "normalizer");
  parse_pre_tokenizer(field(j, "pre_tokenizer"), "pre_tokenizer");
  if (std::none_of(steps_.begin(), steps_.end(), [](const PreStep& s) { return !s.split; })) {
    fail("pre_tokenizer", "expected a ByteLevel step (this reader implements byte-level BPE)");
  }
  parse_post_processor(field(j, "post_processor"), "post_processor");
  parse_decoder(field(j, "decoder"), "decoder");
}

std::unique_ptr<icu::RegexPattern> BpeTokenizer::compile(const std::string& where,
                                                         const std::string& pattern,
                                                         bool literal) const {
  // ICU reads \s as White_Space (U+000B and U+0085 included), as the Rust regex engines that
  // Hugging Face tokenizers use do.
  UErrorCode status = U_ZERO_ERROR;
  UParseError error{};
  std::unique_ptr<icu::RegexPattern> compiled(icu::RegexPattern::compile(
      icu::UnicodeString::fromUTF8(pattern), literal ? UREGEX_LITERAL : 0, error, status));
  if (U_FAILURE(status)) {
    fail(where, std::string("the regular expression does not compile (") + u_errorName(status) +
                    " at offset " + std::to_string(error.offset) + ")");
  }
  return compiled;
}

void BpeTokenizer::parse_normalizer(const json& j, const std::string& where) {
  if (j.is_null()) return;
  const std::string type = type_of(j);
  if (type == "Sequence") {
    const json& list = field(j, "normalizers");
    if (!list.is_array()) fail(where + ".normalizers", "expected a list");
    for (std::size_t i = 0; i < list.size(); ++i) {
      parse_normalizer(list[i], where + ".normalizers[" + std::to_string(i) + "]");
    }
    return;
  }
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = type == "NFC"    ? icu::Normalizer2::getNFCInstance(status)
                              : type == "NFKC" ? icu::Normalizer2::getNFKCInstance(status)
                              : type == "NFD"  ? icu::Normalizer2::getNFDInstance(status)
                              : type == "NFKD" ? icu::Normalizer2::getNFKDInstance(status)
                                               : nullptr;
  if (n == nullptr || U_FAILURE(status)) {
    fail(where, "normalizer type '" + type +
                    "' is not implemented (NFC, NFKC, NFD, NFKD are; a SentencePiece-style "
                    "tokenizer.json with Prepend/Replace is not: use the checkpoint's "
                    "tokenizer.model)");
  }
  normalizers_.push_back(n);
}

void BpeTokenizer::parse_pre_tokenizer(const json& j, const std::string& where) {
  const std::string type = type_of(j);
  if (type == "Sequence") {
    const json& list = field(j, "pretokenizers");
    if (!list.is_array()) fail(where + ".pretokenizers", "expected a list");
    for (std::size_t i = 0; i < list.size(); ++i) {
      parse_pre_tokenizer(list[i], where + ".pretokenizers[" + std::to_string(i) + "]");
    }
  } else if (type == "ByteLevel") {
    if (flag(j, "use_regex") || !field(j, "use_regex").is_boolean()) {  // GPT-2's split first
      steps_.push_back({compile(where,
                                "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|"
                                "\\s+(?!\\S)|\\s+",
                                false),
                        false});
    }
    steps_.push_back({nullptr, flag(j, "add_prefix_space")});
  } else if (type == "Split") {
    const json& pattern = field(j, "pattern");
    const json& regex = field(pattern, "Regex");
    const json& literal = field(pattern, "String");
    if (!regex.is_string() && !literal.is_string()) {
      fail(where + ".pattern", "expected {\"Regex\": ...} or {\"String\": ...}");
    }
    if (field(j, "behavior") != "Isolated" || flag(j, "invert")) {
      fail(where, "only behavior 'Isolated' without invert is implemented; got " +
                      field(j, "behavior").dump());
    }
    steps_.push_back(
        {compile(where + ".pattern",
                 regex.is_string() ? regex.get<std::string>() : literal.get<std::string>(),
                 !regex.is_string()),
         false});
  } else {
    fail(where, "pre-tokenizer type '" + type +
                    "' is not implemented (ByteLevel, Split and Sequence are; a "
                    "SentencePiece-style tokenizer.json with Metaspace is not: use the "
                    "checkpoint's tokenizer.model)");
  }
}

void BpeTokenizer::parse_model(const json& m) {
  if (type_of(m) != "BPE") fail("model.type", "expected \"BPE\"; got " + field(m, "type").dump());
  if (flag(m, "byte_fallback")) {
    fail("model.byte_fallback",
         "SentencePiece-style BPE with byte fallback is not implemented (use the checkpoint's "
         "tokenizer.model)");
  }
  for (const char* name : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const json& v = field(m, name);
    if (!v.is_null() && !(v.is_string() && v.get<std::string>().empty())) {
      fail(std::string("model.") + name, "is not implemented; got " + v.dump());
    }
  }
  ignore_merges_ = flag(m, "ignore_merges");
  const json& vocab = field(m, "vocab");
  if (!vocab.is_object()) fail("model.vocab", "expected an object of token: id");
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
        id.get<std::int64_t>() >= kMaxTokenId) {
      fail("model.vocab[\"" + token + "\"]",
           "expected an id in [0, " + std::to_string(kMaxTokenId) + "); got " + id.dump());
    }
    const auto n = id.get<std::int64_t>();
    if (n >= static_cast<std::int64_t>(tokens_.size()))
      tokens_.resize(n + 1), special_.resize(n + 1, 1);
    if (!tokens_[n].empty())
      fail("model.vocab[\"" + token + "\"]", "id " + std::to_string(n) + " is used twice");
    tokens_[n] = token;
    special_[n] = 0;
    vocab_[token] = n;
  }
  for (int b = 0; b < 256; ++b) {
    if (!vocab_.contains(byte_chars_[b])) {
      fail("model.vocab", "byte " + std::to_string(b) + " (\"" + byte_chars_[b] +
                              "\") is missing: a byte-level vocabulary holds all 256");
    }
  }
  const json& merges = field(m, "merges");
  if (!merges.is_array()) fail("model.merges", "expected a list");
  for (std::size_t r = 0; r < merges.size(); ++r) {
    const std::string where = "model.merges[" + std::to_string(r) + "]";
    const json& e = merges[r];
    std::string a, b;
    if (e.is_string()) {
      const std::string s = e.get<std::string>();
      const auto space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
        fail(where, "expected \"left right\"; got " + e.dump());
      }
      a = s.substr(0, space), b = s.substr(space + 1);
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      a = e[0].get<std::string>(), b = e[1].get<std::string>();
    } else {
      fail(where, "expected \"left right\" or [left, right]; got " + e.dump());
    }
    const std::int64_t ia = token_id(a, where), ib = token_id(b, where);
    const std::int64_t merged = token_id(a + b, where);
    merges_.try_emplace((static_cast<std::uint64_t>(ia) << 32) | static_cast<std::uint64_t>(ib),
                        static_cast<std::int64_t>(r), merged);
  }
}

std::int64_t BpeTokenizer::token_id(const std::string& token, const std::string& where) const {
  const auto it = vocab_.find(token);
  if (it == vocab_.end()) fail(where, "\"" + token + "\" is not in model.vocab");
  return it->second;
}

void BpeTokenizer::parse_added_tokens(const json& list) {
  if (list.is_null()) return;
  if (!list.is_array()) fail("added_tokens", "expected a list");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string where = "added_tokens[" + std::to_string(i) + "]";
    const json& t = list[i];
    const json &id = field(t, "id"), &content = field(t, "content");
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
        id.get<std::int64_t>() >= kMaxTokenId || !content.is_string() ||
        content.get<std::string>().empty()) {
      fail(where, "expected {\"id\": 0 <= id < " + std::to_string(kMaxTokenId) +
                      ", \"content\": a non-empty string, ...}; got " + t.dump());
    }
    for (const char* name : {"single_word", "lstrip", "rstrip"}) {
      if (flag(t, name)) fail(where + "." + name, "true is not implemented");
    }
    AddedToken a{content.get<std::string>(), id.get<std::int64_t>(), flag(t, "special")};
    if (a.id >= static_cast<std::int64_t>(tokens_.size()))
      tokens_.resize(a.id + 1), special_.resize(a.id + 1, 1);
    tokens_[a.id] = a.content;
    special_[a.id] = a.special ? 1 : 0;
    added_.push_back(std::move(a));
  }
  std::stable_sort(added_.begin(), added_.end(), [](const AddedToken& x, const AddedToken& y) {
    return x.content.size() > y.content.size();
  });
}

void BpeTokenizer::parse_post_processor(const json& j, const std::string& where) {
  const std::string type = type_of(j);
  if (j.is_null() || type == "ByteLevel") return;
  if (type == "Sequence") {
    const json& list = field(j, "processors");
    if (!list.is_array()) fail(where + ".processors", "expected a list");
    for (std::size_t i = 0; i < list.size(); ++i) {
      parse_post_processor(list[i], where + ".processors[" + std::to_string(i) + "]");
    }
    return;
  }
  if (type != "TemplateProcessing") {
    fail(where, "post-processor type '" + type +
                    "' is not implemented (ByteLevel, TemplateProcessing, Sequence are)");
  }
  // A template that starts with a special token prepends it: that is the BOS.
  const json& single = field(j, "single");
  if (!single.is_array() || single.empty()) fail(where + ".single", "expected a list");
  const json& first = field(single[0], "SpecialToken");
  if (first.is_null()) return;
  const json& name = field(first, "id");
  const json& tokens = field(j, "special_tokens");
  const json& ids =
      name.is_string() && tokens.is_object() && tokens.contains(name.get<std::string>())
          ? field(tokens[name.get<std::string>()], "ids")
          : json();
  if (!ids.is_array() || ids.size() != 1 || !ids[0].is_number_integer() ||
      ids[0].get<std::int64_t>() < 0 || ids[0].get<std::int64_t>() >= vocab_size()) {
    fail(where + ".special_tokens", "expected one id in [0, " + std::to_string(vocab_size()) +
                                        ") for the template's first token " + name.dump());
  }
  bos = ids[0].get<std::int64_t>();
  add_bos = true;
}

void BpeTokenizer::parse_decoder(const json& j, const std::string& where) {
  const std::string type = type_of(j);
  if (type == "Sequence") {
    const json& list = field(j, "decoders");
    if (!list.is_array() || list.size() != 1) fail(where, "expected a single ByteLevel decoder");
    parse_decoder(list[0], where + ".decoders[0]");
  } else if (type != "ByteLevel") {
    fail(where, "expected a ByteLevel decoder; got " + j.dump().substr(0, 80));
  }
}

std::vector<std::string> BpeTokenizer::pre_tokenize(std::string text) const {
  for (const icu::Normalizer2* n : normalizers_) {
    UErrorCode status = U_ZERO_ERROR;
    const icu::UnicodeString normalized = n->normalize(icu::UnicodeString::fromUTF8(text), status);
    if (U_FAILURE(status)) {
      throw Error(ErrorKind::kInvalidArgument,
                  file_ + ": normalizer failed (" + u_errorName(status) + ")");
    }
    text.clear();
    normalized.toUTF8String(text);
  }
  std::vector<std::string> pieces{std::move(text)}, next;
  for (const PreStep& step : steps_) {
    next.clear();
    for (std::string& piece : pieces) {
      if (!step.split) {  // ByteLevel: every byte becomes its character
        if (step.add_prefix_space && (piece.empty() || piece.front() != ' '))
          piece.insert(0, 1, ' ');
        std::string mapped;
        for (const char c : piece) mapped += byte_chars_[static_cast<unsigned char>(c)];
        next.push_back(std::move(mapped));
        continue;
      }
      const icu::UnicodeString u = icu::UnicodeString::fromUTF8(piece);
      UErrorCode status = U_ZERO_ERROR;
      std::unique_ptr<icu::RegexMatcher> m(step.split->matcher(u, status));
      std::int32_t last = 0;
      const auto add = [&](std::int32_t from, std::int32_t to) {
        if (to <= from) return;
        std::string s;
        u.tempSubStringBetween(from, to).toUTF8String(s);
        next.push_back(std::move(s));
      };
      while (U_SUCCESS(status) && m->find(status)) {
        const std::int32_t start = m->start(status), end = m->end(status);
        add(last, start);  // Isolated: the text between matches is a piece too
        add(start, end);
        last = end;
      }
      if (U_FAILURE(status)) {
        throw Error(ErrorKind::kInvalidArgument,
                    file_ + ": pre-tokenizer regex failed (" + u_errorName(status) + ")");
      }
      add(last, u.length());
    }
    pieces.swap(next);
  }
  return pieces;
}

// BPE on one pre-tokenized word (in byte-level characters): the pair of lowest rank merges first
// (leftmost on a tie) until no pair has a merge.
void BpeTokenizer::merge(const std::string& word, std::vector<std::int64_t>& ids) const {
  if (ignore_merges_) {
    if (const auto it = vocab_.find(word); it != vocab_.end()) {
      ids.push_back(it->second);
      return;
    }
  }
  std::vector<std::int64_t> symbols;
  for (std::size_t i = 0; i < word.size();) {
    const std::size_t start = i;
    next_code_point(word, i);
    symbols.push_back(vocab_.at(word.substr(start, i - start)));
  }
  for (;;) {
    std::int64_t best_rank = -1, merged = 0;
    std::size_t at = 0;
    for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
      const auto key = (static_cast<std::uint64_t>(symbols[i]) << 32) |
                       static_cast<std::uint64_t>(symbols[i + 1]);
      const auto it = merges_.find(key);
      if (it != merges_.end() && (best_rank < 0 || it->second.first < best_rank)) {
        best_rank = it->second.first, merged = it->second.second, at = i;
      }
    }
    if (best_rank < 0) break;
    symbols[at] = merged;
    symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(at) + 1);
  }
  ids.insert(ids.end(), symbols.begin(), symbols.end());
}

std::vector<std::int64_t> BpeTokenizer::encode(std::string_view text) const {
  if (!is_valid_utf8(text)) {
    throw Error(ErrorKind::kInvalidArgument, "the text to encode is not valid UTF-8");
  }
  std::vector<std::int64_t> ids;
  std::size_t plain = 0;  // start of the text not yet encoded
  const auto encode_plain = [&](std::size_t end) {
    if (end > plain) {
      for (const std::string& word : pre_tokenize(std::string(text.substr(plain, end - plain)))) {
        merge(word, ids);
      }
    }
  };
  for (std::size_t i = 0; i < text.size();) {
    const auto hit = std::find_if(added_.begin(), added_.end(), [&](const AddedToken& a) {
      return text.substr(i, a.content.size()) == a.content;
    });
    if (hit == added_.end()) {
      ++i;
      continue;
    }
    encode_plain(i);
    ids.push_back(hit->id);
    i += hit->content.size();
    plain = i;
  }
  encode_plain(text.size());
  return ids;
}

std::string BpeTokenizer::decode(std::span<const std::int64_t> ids) const {
  std::string bytes;
  for (const std::int64_t id : ids) {
    if (id < 0 || id >= vocab_size() || special_[id]) continue;
    const std::string& token = tokens_[id];
    // A token all of byte-level characters is bytes; another one (an added token) is itself.
    std::string mapped;
    bool all_mapped = true;
    for (std::size_t i = 0; i < token.size() && all_mapped;) {
      const auto it = char_bytes_.find(next_code_point(token, i));
      all_mapped = it != char_bytes_.end();
      if (all_mapped) mapped += it->second;
    }
    bytes += all_mapped ? mapped : token;
  }
  return utf8_lossy(bytes);
}

}  // namespace

bool tokenizer_json_available() { return true; }

std::unique_ptr<Tokenizer> parse_tokenizer_json(std::string_view text,
                                                const std::string& file_name) {
  return std::make_unique<BpeTokenizer>(text, file_name);
}

#else

bool tokenizer_json_available() { return false; }

std::unique_ptr<Tokenizer> parse_tokenizer_json(std::string_view, const std::string& file_name) {
  throw Error(ErrorKind::kInvalidArgument,
              file_name +
                  ": this build reads no tokenizer.json (libicu-dev was not found at "
                  "configure time; scripts/setup.sh installs it)");
}

#endif

}  // namespace tileops::llama
