// Text to token ids and back with a checkpoint's own tokenizer: SentencePiece `tokenizer.model`
// (libsentencepiece) or Hugging Face `tokenizer.json` byte-level BPE (bpe_tokenizer.h), and the
// incremental decoder that prints generated text token by token.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tileops::llama {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // The ids of `text` (UTF-8, else kInvalidArgument), without BOS; special tokens written in the
  // text encode as themselves where the format parses them (tokenizer.json's added tokens).
  virtual std::vector<std::int64_t> encode(std::string_view text) const = 0;
  // The text of `ids` as the format decodes a sequence (SentencePiece drops the first piece's
  // leading space). Always valid UTF-8: a byte sequence that is not becomes U+FFFD. Special
  // tokens (BOS, EOS, ...) and ids outside the vocabulary decode to nothing.
  virtual std::string decode(std::span<const std::int64_t> ids) const = 0;
  // One past the largest id the tokenizer produces.
  virtual std::int64_t vocab_size() const = 0;
  // "SentencePiece" or "byte-level BPE", for messages.
  virtual std::string describe() const = 0;

  std::optional<std::int64_t> bos;  // prepended to a prompt when add_bos
  bool add_bos = false;
  std::vector<std::int64_t> eos;  // generation stops at any of these
};

// Whether this build reads tokenizer.model / tokenizer.json (libsentencepiece-dev and
// libicu-dev found at configure time).
bool sentencepiece_available();
bool tokenizer_json_available();

// The tokenizer of the checkpoint directory `dir`: tokenizer.model (SentencePiece) when present,
// else tokenizer.json. BOS: tokenizer_config.json's add_bos_token when set, else the format's
// default (SentencePiece: add its bos id, as Llama's tokenizer does; tokenizer.json: its
// post_processor's template). EOS: config.json's eos_token_id (a number or a list), else the
// format's own. Throws kInvalidArgument naming the file and what is wrong (no tokenizer, a
// format this build cannot read, a malformed file).
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& dir);

// Single formats, for tests and tools: SentencePiece model file; tokenizer.json text (named
// `file_name` in errors).
std::unique_ptr<Tokenizer> load_sentencepiece(const std::filesystem::path& model_file);
std::unique_ptr<Tokenizer> parse_tokenizer_json(std::string_view text,
                                                const std::string& file_name);

// Turns generated ids into text as they come: text for a token is released once it decodes to
// complete UTF-8 (a character split over byte tokens prints when its last byte arrives), and
// spaces that SentencePiece attaches to a piece come out right because every piece is decoded
// after a few tokens of context. The concatenation of push() results and finish() equals
// decode(context + generated) minus decode(context).
class TextStream {
 public:
  // `context`: the prompt's ids, a whole text (its last few are kept to decode the first new
  // token).
  TextStream(const Tokenizer& tokenizer, std::span<const std::int64_t> context);
  // The text that `id` completes (often empty while a character is incomplete).
  std::string push(std::int64_t id);
  // What is held back at the end of generation (an incomplete character, as U+FFFD).
  std::string finish();

 private:
  const Tokenizer& tokenizer_;
  std::vector<std::int64_t> ids_;
  std::size_t prefix_ = 0;  // ids_[prefix_, read_) was printed; decoded again as context
  std::size_t read_ = 0;    // ids_[read_, end) is not printed yet
};

// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code points > U+10FFFF).
bool is_valid_utf8(std::string_view text);
// `bytes` with every maximal ill-formed subsequence replaced by U+FFFD (as Rust's
// String::from_utf8_lossy, which Hugging Face tokenizers' byte-level decoder uses).
std::string utf8_lossy(std::string_view bytes);

}  // namespace tileops::llama
