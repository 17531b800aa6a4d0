// The decoder's tokenizers (examples/llama/tokenizer.h): a SentencePiece model trained here with
// Debian's spm_train on tests/examples/data/tokenizer_corpus.txt, and the hand-written byte-level
// BPE tests/examples/data/tiny_tokenizer.json, whose expected ids follow from its merges by the
// format's rules (GPT-2's byte-to-character map, the Llama-3 split regex, merges by rank).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

#include "examples/llama/text_generation.h"
#include "examples/llama/tokenizer.h"
#include "tileops/core/error.h"

namespace tileops::llama {
namespace {

namespace fs = std::filesystem;
using Ids = std::vector<std::int64_t>;

const fs::path kData = TILEOPS_TEST_DATA_DIR;

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A fresh directory under the temporary folder, removed at the end of the process.
fs::path scratch_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("tileops-tok-" + std::to_string(getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Streams `generated` after `context` and checks the pieces add up to the whole decode.
std::string streamed(const Tokenizer& t, const Ids& context, const Ids& generated) {
  TextStream stream(t, context);
  std::string text;
  for (const std::int64_t id : generated) text += stream.push(id);
  text += stream.finish();
  Ids all = context;
  all.insert(all.end(), generated.begin(), generated.end());
  const std::string whole = t.decode(all), before = t.decode(context);
  EXPECT_EQ(whole.substr(0, before.size()), before);
  EXPECT_EQ(text, whole.substr(before.size()));
  return text;
}

const std::vector<std::string> kTexts = {
    "Hello world",
    "  leading spaces, tabs\tand\nnew lines\n\n",
    "Le modèle écrit la suite; Über die Brücke, weiß und grün.",
    "モデルは文章を読み、続きを書きます。 模型读取提示。",
    "emoji 🙂🚀 and a character the corpus never had: ꙮ ǅ",
    "numbers 1 22 333 4096 123456789",
};

// --- UTF-8 helpers ---------------------------------------------------------------------------

TEST(Utf8, ValidityFollowsTheStandard) {
  EXPECT_TRUE(is_valid_utf8("plain é 🙂 \xEF\xBF\xBD"));
  EXPECT_FALSE(is_valid_utf8("\xC0\x80"));          // overlong NUL
  EXPECT_FALSE(is_valid_utf8("\xE0\x80\x80"));      // overlong
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));      // surrogate U+D800
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // > U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xF0\x9F\x99"));      // truncated
  EXPECT_FALSE(is_valid_utf8("\x80"));
}

TEST(Utf8, LossyReplacesMaximalSubparts) {
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(utf8_lossy("a\xF0\x9F\x99"
                       "b"),
            "a" + r + "b");                          // one per truncated character
  EXPECT_EQ(utf8_lossy("\xC0\x80"), r + r);          // C0 is never a lead byte
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), r + r + r);  // ED A0 is out of range
  EXPECT_EQ(utf8_lossy("\xE2\x82"), r);
  EXPECT_EQ(utf8_lossy("ok 🙂"), "ok 🙂");
}

// --- byte-level BPE (tokenizer.json) ---------------------------------------------------------

std::unique_ptr<Tokenizer> tiny_bpe(const std::string& from = "", const std::string& to = "") {
  std::string text = read(kData / "tiny_tokenizer.json");
  if (!from.empty()) {
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  }
  return parse_tokenizer_json(text, "tiny_tokenizer.json");
}

TEST(BpeTokenizer, KnownIds) {
  if (!tokenizer_json_available())
    GTEST_FAIL() << "built without libicu-dev: scripts/setup.sh installs it";
  const auto t = tiny_bpe();
  EXPECT_EQ(t->vocab_size(), 303);
  // "the" -> t + he; " the" -> Ġt (rank 0) then he (rank 1) then Ġthe (rank 2).
  EXPECT_EQ(t->encode("the the"), (Ids{'t', 257, 258}));
  // Two spaces: \s+(?!\S) takes the first, the second starts " b".
  EXPECT_EQ(t->encode("a  b"), (Ids{'a', ' ', ' ', 'b'}));
  // \p{N}{1,3}: "123" | "45", so 3-4 never merges; "12" does.
  EXPECT_EQ(t->encode("12345"), (Ids{259, '3', '4', '5'}));
  EXPECT_EQ(t->encode("34"), (Ids{260}));
  // The split comes before the merges: I and ' are different pieces, so I-' never merges.
  EXPECT_EQ(t->encode("I'm"), (Ids{'I', '\'', 'm'}));
  EXPECT_EQ(t->encode("I'"), (Ids{'I', '\''}));
  // Multi-byte: é is C3 A9 (one merge); 🙂 is four byte tokens; 中 three.
  EXPECT_EQ(t->encode("é"), (Ids{262}));
  EXPECT_EQ(t->encode("🙂"), (Ids{0xF0, 0x9F, 0x99, 0x82}));
  EXPECT_EQ(t->encode(" 中"), (Ids{' ', 0xE4, 0xB8, 0xAD}));
  // \s is White_Space: U+000B U+000B before a letter splits as \s+(?!\S), so ċ-ċ never merges
  // (with \s as [\t\n\f\r\p{Z}] both would be punctuation, one piece, and merge).
  EXPECT_EQ(t->encode("a\v\vb"), (Ids{'a', 0x0B, 0x0B, 'b'}));
  EXPECT_EQ(t->encode("\v\v"), (Ids{263}));
  // Newlines: \s*[\r\n]+ keeps them together.
  EXPECT_EQ(t->encode("a\n\nb"), (Ids{'a', '\n', '\n', 'b'}));
}

TEST(BpeTokenizer, SpecialTokensAndBos) {
  if (!tokenizer_json_available())
    GTEST_FAIL() << "built without libicu-dev: scripts/setup.sh installs it";
  const auto t = tiny_bpe();
  ASSERT_TRUE(t->bos.has_value());
  EXPECT_EQ(*t->bos, 300);  // the post_processor template's first token
  EXPECT_TRUE(t->add_bos);
  EXPECT_EQ(t->encode("<|begin_of_text|>the<|eot|> <tool>"), (Ids{300, 't', 257, 301, ' ', 302}));
  EXPECT_EQ(encode_prompt(*t, "the"), (Ids{300, 't', 257}));
  // Special tokens decode to nothing, a plain added token to itself.
  EXPECT_EQ(t->decode(Ids{300, 't', 257, 301, ' ', 302}), "the <tool>");
  // An incomplete character decodes to U+FFFD; ids outside the vocabulary to nothing.
  EXPECT_EQ(t->decode(Ids{'a', 0xF0, 0x9F, 999, -1}), "a\xEF\xBF\xBD");
}

TEST(BpeTokenizer, RoundTrips) {
  if (!tokenizer_json_available())
    GTEST_FAIL() << "built without libicu-dev: scripts/setup.sh installs it";
  const auto t = tiny_bpe();
  for (const std::string& text : kTexts) {
    const Ids ids = t->encode(text);
    EXPECT_EQ(t->decode(ids), text);
    // Streamed one token at a time after a prompt: the same text.
    EXPECT_EQ(streamed(*t, t->encode("Prompt: "), ids), text);
  }
}

TEST(BpeTokenizer, StreamWaitsForTheLastByteOfACharacter) {
  if (!tokenizer_json_available())
    GTEST_FAIL() << "built without libicu-dev: scripts/setup.sh installs it";
  const auto t = tiny_bpe();
  TextStream stream(*t, Ids{'a'});
  EXPECT_EQ(stream.push(0xF0), "");
  EXPECT_EQ(stream.push(0x9F), "");
  EXPECT_EQ(stream.push(0x99), "");
  EXPECT_EQ(stream.push(0x82), "🙂");
  EXPECT_EQ(stream.push(0xE4), "");
  EXPECT_EQ(stream.finish(), "\xEF\xBF\xBD");  // generation ended inside a character
  // Random byte tokens (mostly invalid UTF-8) stream to the lossy decode of the whole.
  std::mt19937 rng(7);
  Ids random(200);
  for (auto& id : random) id = static_cast<std::int64_t>(rng() % 265);
  const std::string text = streamed(*t, Ids{'x', 'y'}, random);
  EXPECT_TRUE(is_valid_utf8(text));
}

TEST(BpeTokenizer, IgnoreMergesAndNormalizer) {
  if (!tokenizer_json_available())
    GTEST_FAIL() << "built without libicu-dev: scripts/setup.sh installs it";
  EXPECT_EQ(tiny_bpe()->encode("xyz"), (Ids{'x', 'y', 'z'}));
  EXPECT_EQ(tiny_bpe("\"ignore_merges\": false", "\"ignore_merges\": true")->encode("xyz"),
            (Ids{264}));
  // e + combining acute is é after NFC; without a normalizer it stays two characters.
  EXPECT_EQ(tiny_bpe()->encode("e\xCC\x81"), (Ids{'e', 0xCC, 0x81}));
  EXPECT_EQ(
      tiny_bpe("\"normalizer\": null", "\"normalizer\": {\"type\": \"NFC\"}")->encode("e\xCC\x81"),
      (Ids{262}));
  // merges as [left, right] pairs (newer files) read the same.
  EXPECT_EQ(tiny_bpe("\"Ġ t\"", "[\"Ġ\", \"t\"]")->encode(" the"), (Ids{258}));
}

void expect_refused(const std::string& from, const std::string& to, const std::string& words) {
  try {
    tiny_bpe(from, to);
    ADD_FAILURE() << "accepted: " << to;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("tiny_tokenizer.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(BpeTokenizer, RefusesWhatItDoesNotImplement) {
  if (!tokenizer_json_available())
    GTEST_FAIL() << "built without libicu-dev: scripts/setup.sh installs it";
  expect_refused("\"byte_fallback\": false", "\"byte_fallback\": true", "model.byte_fallback");
  expect_refused("\"Ġ t\"", "\"Ġ q\"", "model.merges[0]");  // Ġq is not in the vocabulary
  expect_refused("\"Ġ t\"", "\"Ġt\"", "model.merges[0]");
  expect_refused("\"type\": \"Split\"", "\"type\": \"Metaspace\"", "Metaspace");
  expect_refused("\"normalizer\": null", "\"normalizer\": {\"type\": \"Replace\"}", "normalizer");
  expect_refused("\"behavior\": \"Isolated\"", "\"behavior\": \"Removed\"", "Isolated");
  expect_refused("\"Regex\": \"(?i:", "\"Regex\": \"((?i:", "does not compile");
  expect_refused("\"rstrip\": false", "\"rstrip\": true", "added_tokens[0].rstrip");
  expect_refused("\"Ġ\": 32,", "", "byte 32");
  expect_refused("\"type\": \"BPE\"", "\"type\": \"WordPiece\"", "model.type");
  EXPECT_THROW(parse_tokenizer_json("[1, 2", "x.json"), Error);
  EXPECT_THROW(tiny_bpe()->encode("bad \xC3"), Error);
}

// --- SentencePiece (tokenizer.model) ---------------------------------------------------------

class SentencePiece : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!sentencepiece_available()) return;
    dir_ = scratch_dir("spm");
    // Llama's settings: BPE with byte fallback, no normalization, a dummy prefix space.
    const std::string command =
        std::string(TILEOPS_SPM_TRAIN) + " --input=" + (kData / "tokenizer_corpus.txt").string() +
        " --model_prefix=" + (dir_ / "tokenizer").string() +
        " --vocab_size=400 --model_type=bpe --byte_fallback=true --character_coverage=1.0"
        " --normalization_rule_name=identity --remove_extra_whitespaces=false"
        " --minloglevel=2 > " +
        (dir_ / "spm_train.log").string() + " 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0) << command << "\n" << read(dir_ / "spm_train.log");
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void SetUp() override {
    if (!sentencepiece_available())
      GTEST_FAIL() << "built without libsentencepiece-dev: scripts/setup.sh installs it";
  }
  static inline fs::path dir_;
};

TEST_F(SentencePiece, LlamaConventionsAndBytes) {
  const auto t = load_sentencepiece(dir_ / "tokenizer.model");
  EXPECT_EQ(t->vocab_size(), 400);
  EXPECT_EQ(t->bos, 1);  // <unk> 0, <s> 1, </s> 2, then the 256 byte pieces <0x00> = 3 ...
  EXPECT_TRUE(t->add_bos);
  EXPECT_EQ(t->eos, (Ids{2}));
  // ꙮ (U+A66E, EA 99 AE) is not in the corpus: three byte pieces after the "▁" piece.
  const Ids ids = t->encode("ꙮ");
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ((Ids{ids.begin() + 1, ids.end()}), (Ids{3 + 0xEA, 3 + 0x99, 3 + 0xAE}));
  EXPECT_EQ(t->decode(ids), "ꙮ");
  EXPECT_EQ(t->decode(Ids{3 + 0xEA, 3 + 0x99}), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(t->decode(Ids{1, 3 + 'a', 2, 5000, -3}), "a");  // controls and strangers: nothing
  EXPECT_THROW(t->encode("bad \xC3"), Error);
}

TEST_F(SentencePiece, RoundTripsAndStreams) {
  const auto t = load_sentencepiece(dir_ / "tokenizer.model");
  for (const std::string& text : kTexts) {
    const Ids ids = t->encode(text);
    EXPECT_EQ(t->decode(ids), text);
    // The generated part keeps the space SentencePiece attaches to its first piece.
    const Ids context = t->encode("Prefix");
    const std::string text_after = streamed(*t, context, ids);
    EXPECT_EQ(t->decode([&] {
      Ids all = context;
      all.insert(all.end(), ids.begin(), ids.end());
      return all;
    }()),
              "Prefix" + text_after);
  }
  // Byte pieces one at a time: nothing until the character is complete.
  TextStream stream(*t, t->encode("a"));
  EXPECT_EQ(stream.push(3 + 0xEA), "");
  EXPECT_EQ(stream.push(3 + 0x99), "");
  EXPECT_EQ(stream.push(3 + 0xAE), "ꙮ");
}

TEST_F(SentencePiece, CheckpointDirectorySettings) {
  const fs::path dir = scratch_dir("checkpoint");
  EXPECT_THROW(load_tokenizer(dir), Error);  // neither file
  fs::copy_file(dir_ / "tokenizer.model", dir / "tokenizer.model");
  write(dir / "tokenizer_config.json", R"({"add_bos_token": false})");
  write(dir / "config.json", R"({"eos_token_id": [2, 5]})");
  auto t = load_tokenizer(dir);
  EXPECT_EQ(t->describe(), "SentencePiece");
  EXPECT_FALSE(t->add_bos);
  EXPECT_EQ(t->eos, (Ids{2, 5}));
  write(dir / "config.json", R"({"eos_token_id": 400})");
  try {
    load_tokenizer(dir);
    ADD_FAILURE() << "eos_token_id 400 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("eos_token_id"), std::string::npos) << e.what();
  }
  // tokenizer.json is read when there is no tokenizer.model.
  fs::remove(dir / "tokenizer.model");
  fs::remove(dir / "config.json");
  fs::copy_file(kData / "tiny_tokenizer.json", dir / "tokenizer.json");
  if (tokenizer_json_available()) {
    t = load_tokenizer(dir);
    EXPECT_EQ(t->describe(), "byte-level BPE");
    EXPECT_FALSE(t->add_bos);  // tokenizer_config.json overrides the template
    // A tokenizer.model that is no SentencePiece model (Llama 3's tiktoken file): tokenizer.json.
    write(dir / "tokenizer.model", "SGVsbG8= 0\n");
    EXPECT_EQ(load_tokenizer(dir)->describe(), "byte-level BPE");
    fs::remove(dir / "tokenizer.json");
    try {
      load_tokenizer(dir);
      ADD_FAILURE() << "a tiktoken file read as SentencePiece";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("not a SentencePiece model"), std::string::npos)
          << e.what();
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tileops::llama
