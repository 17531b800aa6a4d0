// Bounded LRU cache of operator instances, keyed on (problem, implementation index), with a
// small per-thread memo in front: a call that repeats a recent problem on its thread takes no
// lock and copies nothing.
#include <array>
#include <atomic>
#include <list>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "tileops/core/error.h"
#include "tileops/ops/registry.h"

namespace tileops::ops {

const Implementation& find_implementation(const Problem& problem, int index);
void check_stream(const Problem& problem, const Context& ctx);

namespace {

struct Key {
  Problem problem;
  int implementation_index;
  friend bool operator==(const Key&, const Key&) = default;
};

// A lookup key that refers to the caller's problem instead of copying it.
struct KeyRef {
  const Problem& problem;
  int implementation_index;
};

std::size_t key_hash(const Problem& problem, int index) {
  return problem.hash() * 31 + static_cast<std::size_t>(index);
}

struct KeyHash {
  using is_transparent = void;
  std::size_t operator()(const Key& key) const {
    return key_hash(key.problem, key.implementation_index);
  }
  std::size_t operator()(const KeyRef& key) const {
    return key_hash(key.problem, key.implementation_index);
  }
};

struct KeyEqual {
  using is_transparent = void;
  bool operator()(const Key& a, const Key& b) const { return a == b; }
  bool operator()(const KeyRef& a, const Key& b) const {
    return a.implementation_index == b.implementation_index && a.problem == b.problem;
  }
  bool operator()(const Key& a, const KeyRef& b) const { return (*this)(b, a); }
};

// Bumped when entries leave the cache other than by eviction (clear, a new capacity), so that no
// thread's memo serves an instance the cache no longer counts.
std::atomic<std::uint64_t> generation{1};

class OperatorCache {
 public:
  std::shared_ptr<const Operator> get(const Problem& problem, int index) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = map_.find(KeyRef{problem, index});
      if (it != map_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second.position);
        return it->second.instance;
      }
    }
    // Created outside the lock: creation may be slow (JIT) and may throw.
    const Implementation& impl = find_implementation(problem, index);
    std::shared_ptr<const Operator> instance = impl.create(problem);
    if (!instance) throw_internal_error("operator cache", "factory of " + impl.name + " failed");
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = map_.find(KeyRef{problem, index});
    if (it != map_.end()) return it->second.instance;  // another thread won the race
    lru_.push_front(Key{problem, index});
    map_.emplace(lru_.front(), Entry{instance, lru_.begin()});
    evict_locked();
    return instance;
  }

  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    generation.fetch_add(1, std::memory_order_relaxed);
    map_.clear();
    lru_.clear();
  }

  std::size_t size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return map_.size();
  }

  void set_capacity(std::size_t capacity) {
    std::lock_guard<std::mutex> lock(mutex_);
    generation.fetch_add(1, std::memory_order_relaxed);
    capacity_ = std::max<std::size_t>(capacity, 1);
    evict_locked();
  }

 private:
  struct Entry {
    std::shared_ptr<const Operator> instance;
    std::list<Key>::iterator position;
  };

  void evict_locked() {
    while (map_.size() > capacity_) {
      map_.erase(lru_.back());
      lru_.pop_back();
    }
  }

  std::mutex mutex_;
  std::size_t capacity_ = 1024;
  std::list<Key> lru_;
  std::unordered_map<Key, Entry, KeyHash, KeyEqual> map_;
};

OperatorCache& cache() {
  static OperatorCache instance;
  return instance;
}

// The memo: a few recent (problem, instance) pairs of this thread, slotted by hash. Memo hits do
// not refresh the cache's LRU order; an instance evicted meanwhile stays valid (shared).
struct MemoSlot {
  std::uint64_t generation = 0;
  std::size_t hash = 0;
  std::optional<Key> key;
  std::shared_ptr<const Operator> instance;
};
constexpr std::size_t kMemoSlots = 16;

}  // namespace

std::shared_ptr<const Operator> cached_operator(const Problem& problem, int implementation_index) {
  thread_local std::array<MemoSlot, kMemoSlots> memo;
  const std::size_t hash = key_hash(problem, implementation_index);
  const std::uint64_t now = generation.load(std::memory_order_relaxed);
  MemoSlot& slot = memo[hash % kMemoSlots];
  if (slot.key.has_value() && slot.generation == now && slot.hash == hash &&
      KeyEqual{}(KeyRef{problem, implementation_index}, *slot.key)) {
    return slot.instance;
  }
  std::shared_ptr<const Operator> instance = cache().get(problem, implementation_index);
  slot = {now, hash, Key{problem, implementation_index}, instance};
  return instance;
}

void clear_cache() { cache().clear(); }
std::size_t cache_size() { return cache().size(); }
void set_cache_capacity(std::size_t capacity) { cache().set_capacity(capacity); }

PreparedOperator::PreparedOperator(Problem problem, std::vector<std::string_view> argument_names,
                                   int implementation_index)
    : problem_(std::move(problem)),
      argument_names_(std::move(argument_names)),
      operator_(cached_operator(problem_, implementation_index)) {}

void PreparedOperator::run(std::span<const Tensor> tensors, const Context& ctx) const {
  check_stream(problem_, ctx);
  for (std::size_t i = 0; i < problem_.tensors.size(); ++i) {
    const TensorDesc& expected = problem_.tensors[i];
    if (!expected.matches(tensors[i])) {
      throw_argument_error(ErrorKind::kInvalidArgument, problem_.op, argument_names_.at(i),
                           expected.describe() + " (the geometry this instance was built for)",
                           tensors[i].describe());
    }
  }
  operator_->run(tensors, ctx);
}

}  // namespace tileops::ops
