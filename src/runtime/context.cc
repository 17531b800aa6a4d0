#include "tileops/runtime/context.h"

#include "tileops/runtime/thread_pool.h"
#include "tileops/runtime/workspace_pool.h"

namespace tileops {

ThreadPool& Context::threads() const {
  return thread_pool != nullptr ? *thread_pool : ThreadPool::global();
}

WorkspacePool& Context::workspace() const {
  return workspace_pool != nullptr ? *workspace_pool : WorkspacePool::global();
}

}  // namespace tileops
