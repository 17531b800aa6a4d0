// Context: per-call execution settings every operator takes last.
#pragma once

namespace tileops {

class ThreadPool;
class WorkspacePool;

struct Context {
  // CPU: must be null (work runs inline on the calling thread, ordered). CUDA: a cudaStream_t.
  void* stream = nullptr;
  // Which registered implementation runs (0 = the default, fastest correct one).
  int implementation_index = 0;
  // Null = the process-wide pools.
  ThreadPool* thread_pool = nullptr;
  WorkspacePool* workspace_pool = nullptr;

  ThreadPool& threads() const;
  WorkspacePool& workspace() const;
};

}  // namespace tileops
