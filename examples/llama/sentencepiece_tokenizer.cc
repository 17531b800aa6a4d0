// SentencePiece `tokenizer.model` through Debian's libsentencepiece (when configure found it).
#include "examples/llama/tokenizer.h"
#include "tileops/core/error.h"

#if TILEOPS_HAVE_SENTENCEPIECE
#include <sentencepiece_processor.h>
#endif

namespace tileops::llama {

#if TILEOPS_HAVE_SENTENCEPIECE

namespace {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  explicit SentencePieceTokenizer(const std::filesystem::path& file) : file_(file.string()) {
    const auto status = processor_.Load(file_);
    if (!status.ok()) {
      throw Error(ErrorKind::kInvalidArgument,
                  file_ + ": not a SentencePiece model (" + status.ToString() + ")");
    }
    if (processor_.bos_id() >= 0) bos = processor_.bos_id();
    add_bos = bos.has_value();  // Llama's tokenizer adds BOS by default
    if (processor_.eos_id() >= 0) eos = {processor_.eos_id()};
  }

  std::vector<std::int64_t> encode(std::string_view text) const override {
    if (!is_valid_utf8(text)) {
      throw Error(ErrorKind::kInvalidArgument, "the text to encode is not valid UTF-8");
    }
    std::vector<int> ids;
    const auto status = processor_.Encode(text, &ids);
    if (!status.ok()) throw Error(ErrorKind::kInvalidArgument, file_ + ": " + status.ToString());
    return {ids.begin(), ids.end()};
  }

  std::string decode(std::span<const std::int64_t> ids) const override {
    std::vector<int> kept;
    kept.reserve(ids.size());
    for (const std::int64_t id : ids) {
      if (id < 0 || id >= processor_.GetPieceSize()) continue;
      if (processor_.IsControl(static_cast<int>(id))) continue;  // <s>, </s>, <pad>
      kept.push_back(static_cast<int>(id));
    }
    std::string text;
    const auto status = processor_.Decode(kept, &text);
    if (!status.ok()) throw Error(ErrorKind::kInvalidArgument, file_ + ": " + status.ToString());
    return utf8_lossy(text);
  }

  std::int64_t vocab_size() const override { return processor_.GetPieceSize(); }
  std::string describe() const override { return "SentencePiece"; }

 private:
  std::string file_;
  sentencepiece::SentencePieceProcessor processor_;
};

}  // namespace

bool sentencepiece_available() { return true; }

std::unique_ptr<Tokenizer> load_sentencepiece(const std::filesystem::path& model_file) {
  return std::make_unique<SentencePieceTokenizer>(model_file);
}

#else

bool sentencepiece_available() { return false; }

std::unique_ptr<Tokenizer> load_sentencepiece(const std::filesystem::path& model_file) {
  throw Error(ErrorKind::kInvalidArgument,
              model_file.string() +
                  ": this build reads no SentencePiece model (libsentencepiece-dev was not found "
                  "at configure time; scripts/setup.sh installs it)");
}

#endif

}  // namespace tileops::llama
