// Bounded LRU cache of operator instances, keyed on (problem, implementation index).
#include <list>
#include <mutex>
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

struct KeyHash {
  std::size_t operator()(const Key& key) const {
    return key.problem.hash() * 31 + static_cast<std::size_t>(key.implementation_index);
  }
};

class OperatorCache {
 public:
  std::shared_ptr<const Operator> get(const Problem& problem, int index) {
    Key key{problem, index};
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = map_.find(key);
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
    auto it = map_.find(key);
    if (it != map_.end()) return it->second.instance;  // another thread won the race
    lru_.push_front(key);
    map_.emplace(std::move(key), Entry{instance, lru_.begin()});
    evict_locked();
    return instance;
  }

  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    map_.clear();
    lru_.clear();
  }

  std::size_t size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return map_.size();
  }

  void set_capacity(std::size_t capacity) {
    std::lock_guard<std::mutex> lock(mutex_);
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
  std::unordered_map<Key, Entry, KeyHash> map_;
};

OperatorCache& cache() {
  static OperatorCache instance;
  return instance;
}

}  // namespace

std::shared_ptr<const Operator> cached_operator(const Problem& problem, int implementation_index) {
  return cache().get(problem, implementation_index);
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
