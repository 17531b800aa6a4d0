#include "examples/llama/communicator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tileops/core/checked_size.h"
#include "tileops/core/error.h"

namespace tileops::llama {
namespace {

using Clock = std::chrono::steady_clock;

// Fixed room per rank for a message in agree(): the collective needs equal counts up front.
constexpr std::int64_t kMessageBytes = 1024;

class SingleRank final : public Communicator {
 public:
  SingleRank() : Communicator(0) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  [[noreturn]] void abort(int status) override { std::exit(status); }

 protected:
  void all_reduce_impl(std::span<float> /*data*/, double /*timeout_seconds*/) override {}
  void all_gather_bytes_impl(const void* mine, void* out, std::span<const std::int64_t> counts,
                             const char* /*name*/, double /*timeout_seconds*/) override {
    if (counts[0] > 0 && mine != out) {
      std::memmove(out, mine, static_cast<std::size_t>(counts[0]));
    }
  }
};

}  // namespace

void Communicator::all_reduce_sum(std::span<float> data) {
  const auto start = Clock::now();
  all_reduce_impl(data, timeout_seconds_);
  stats_.seconds += std::chrono::duration<double>(Clock::now() - start).count();
  stats_.calls += 1;
  stats_.bytes += static_cast<std::int64_t>(data.size_bytes());
}

void Communicator::all_gather(std::span<const std::byte> mine, std::span<std::byte> out,
                              std::span<const std::int64_t> counts) {
  constexpr std::string_view kWhat = "tensor parallel all_gather";
  if (static_cast<std::int64_t>(counts.size()) != size()) {
    throw_argument_error(ErrorKind::kInvalidArgument, kWhat, "counts",
                         std::to_string(size()) + " counts (one per rank)",
                         std::to_string(counts.size()));
  }
  std::int64_t total = 0;
  for (const std::int64_t c : counts) {
    if (c < 0) {
      throw_argument_error(ErrorKind::kInvalidArgument, kWhat, "counts", "byte counts >= 0",
                           std::to_string(c));
    }
    total = checked_add(total, c, kWhat);
  }
  if (counts[rank()] != static_cast<std::int64_t>(mine.size()) ||
      total != static_cast<std::int64_t>(out.size())) {
    throw_argument_error(
        ErrorKind::kInvalidArgument, kWhat, "mine/out",
        std::to_string(counts[rank()]) + " and " + std::to_string(total) + " bytes",
        std::to_string(mine.size()) + " and " + std::to_string(out.size()));
  }
  const auto start = Clock::now();
  all_gather_bytes_impl(mine.data(), out.data(), counts, "all_gather", timeout_seconds_);
  stats_.seconds += std::chrono::duration<double>(Clock::now() - start).count();
  stats_.calls += 1;
  stats_.bytes += total;
}

void Communicator::agree(const std::string& error, const std::string& phase,
                         double timeout_seconds) {
  if (size() == 1) {
    if (!error.empty()) throw CollectiveError(error, true);
    return;
  }
  // Each rank's status and the start of its message, in one fixed-size record.
  std::vector<char> mine(kMessageBytes, '\0');
  mine[0] = error.empty() ? 'o' : 'x';
  std::memcpy(mine.data() + 1, error.data(),
              std::min<std::size_t>(error.size(), kMessageBytes - 2));
  std::vector<char> all(static_cast<std::size_t>(kMessageBytes * size()));
  const std::vector<std::int64_t> counts(static_cast<std::size_t>(size()), kMessageBytes);
  const std::string name = "the agreement after every rank's attempt " + phase;
  all_gather_bytes_impl(mine.data(), all.data(), counts, name.c_str(), timeout_seconds);
  std::string failures;
  std::vector<std::string> messages;
  for (int r = 0; r < size(); ++r) {
    const char* record = all.data() + static_cast<std::ptrdiff_t>(r) * kMessageBytes;
    if (record[0] == 'o') continue;
    messages.emplace_back(record + 1);
    failures += (failures.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) +
                " failed " + phase + ": " + messages.back();
  }
  if (failures.empty()) return;
  // The same error on every rank (a size --tp must divide, a missing file): said once.
  const bool same = std::all_of(messages.begin(), messages.end(),
                                [&](const std::string& m) { return m == messages[0]; });
  if (same && static_cast<int>(messages.size()) == size()) {
    failures = "every rank (" + std::to_string(size()) + ") failed " + phase + ": " + messages[0];
  }
  throw CollectiveError(failures, rank() == 0);
}

std::unique_ptr<Communicator> single_rank_communicator() { return std::make_unique<SingleRank>(); }

}  // namespace tileops::llama
