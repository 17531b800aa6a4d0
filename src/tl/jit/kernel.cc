// tl::Kernel: specialisation cache, tracing, backend preparation and launch. The cache maps
// (ConstExpr values, argument dtypes, options) to a traced specialisation; prepared executables
// are shared between specialisations whose IR hashes alike under the same options. Both maps are
// guarded by one mutex; launches only read immutable specialisations, so they run concurrently.
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <unordered_map>

#include "src/tl/builder/tracer.h"
#include "src/tl/jit/executable.h"
#include "src/tl/passes/passes.h"
#include "tileops/core/error.h"
#include "tileops/runtime/knobs.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/tl/jit.h"

namespace tileops::tl {
namespace detail {

struct Specialisation {
  std::string ir;  // printed, after passes
  std::uint64_t hash = 0;
  std::shared_ptr<const Executable> executable;
};

class KernelImpl {
 public:
  std::string name;
  std::vector<TraceParam> params;
  Kernel::Body body;
  Options options;
  std::string options_key;  // options.key(), computed once: options never change

  std::shared_ptr<const Specialisation> specialise(std::span<const Argument> args);
  std::size_t size() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return cache_.size();
  }

 private:
  std::string key(std::span<const Argument> args) const;
  void check(std::span<const Argument> args) const;
  std::shared_ptr<Specialisation> trace(std::span<const Argument> args);

  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const Specialisation>> cache_;
  std::unordered_map<std::string, std::shared_ptr<const Executable>> executables_;
};

namespace {

std::string describe(const Argument& a) {
  if (const auto* p = std::get_if<Pointer>(&a))
    return std::string("ptr<") + std::string(name_of(p->dtype)) + ">";
  if (const auto* i = std::get_if<std::int64_t>(&a)) return "int " + std::to_string(*i);
  if (const auto* d = std::get_if<double>(&a)) {
    // The shortest text that reads back as the same double: it keys the specialisation, so two
    // floats may share it only when equal (std::to_string's 6 decimals merged 1.0 and 1.0000001).
    char text[32];
    const auto end = std::to_chars(text, text + sizeof(text), *d).ptr;
    return "float " + std::string(text, end);
  }
  if (const auto* b = std::get_if<bool>(&a)) return *b ? "bool true" : "bool false";
  if (const auto* v = std::get_if<std::vector<std::int64_t>>(&a)) {
    std::string s = "shape [";
    for (std::size_t i = 0; i < v->size(); ++i) s += (i ? ", " : "") + std::to_string((*v)[i]);
    return s + "]";
  }
  return "'" + std::get<std::string>(a) + "'";
}

// The exact value of a ConstExpr argument as a key part that no other value shares and whose end
// is known without a delimiter: numbers exactly (shortest round-trip text), strings
// length-prefixed.
std::string key_part(const Argument& a) {
  if (const auto* s = std::get_if<std::string>(&a)) {
    std::string part = std::to_string(s->size());
    part.insert(0, 1, 's');
    part += ':';
    part += *s;
    return part;
  }
  if (const auto* p = std::get_if<Pointer>(&a)) {  // refused when traced; keyed exactly anyway
    char text[32];
    std::snprintf(text, sizeof(text), "%p", p->data);
    std::string part(name_of(p->dtype));
    part.insert(0, 1, 'p');
    part += '@';
    part += text;
    return part;
  }
  return describe(a);  // ints, floats, bools, shapes: digits, signs, brackets; no '|'
}

const char* param_kind_name(ParamKind k) {
  switch (k) {
    case ParamKind::kGlobalAddress:
      return "a GlobalAddress (tensor or pointer)";
    case ParamKind::kInt:
      return "an int";
    case ParamKind::kFloat:
      return "a float";
    case ParamKind::kBool:
      return "a bool";
  }
  return "?";
}

Type param_type(ParamKind kind, const Argument& a) {
  switch (kind) {
    case ParamKind::kGlobalAddress:
      return {TypeKind::kPointer, std::get<Pointer>(a).dtype, {}};
    case ParamKind::kInt:
      return {TypeKind::kScalar, DataType::kInt64, {}};
    case ParamKind::kFloat:
      return {TypeKind::kScalar, DataType::kFloat32, {}};
    case ParamKind::kBool:
      return {TypeKind::kScalar, DataType::kBool, {}};
  }
  return {};
}

}  // namespace

void KernelImpl::check(std::span<const Argument> args) const {
  if (args.size() != params.size()) {
    throw_argument_error(ErrorKind::kInvalidArgument, name, "arguments",
                         std::to_string(params.size()) + " arguments", std::to_string(args.size()));
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (params[i].constexpr_param) continue;
    const Argument& a = args[i];
    bool ok = false;
    switch (params[i].kind) {
      case ParamKind::kGlobalAddress:
        ok = std::holds_alternative<Pointer>(a);
        break;
      case ParamKind::kInt:
        ok = std::holds_alternative<std::int64_t>(a);
        break;
      case ParamKind::kFloat:
        ok = std::holds_alternative<double>(a) || std::holds_alternative<std::int64_t>(a);
        break;
      case ParamKind::kBool:
        ok = std::holds_alternative<bool>(a);
        break;
    }
    if (!ok) {
      throw_argument_error(ErrorKind::kInvalidType, name, "argument " + std::to_string(i),
                           param_kind_name(params[i].kind), describe(a));
    }
  }
}

std::string KernelImpl::key(std::span<const Argument> args) const {
  // One self-delimiting part per argument (strings length-prefixed), so that no two argument
  // lists share a key: ("x'|c:'y", "z") and ("x", "y'|c:'z") once did.
  std::string k;
  k.reserve(64 + options_key.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (params[i].constexpr_param) {
      k += 'c';
      k += key_part(args[i]);
      k += '|';
    } else if (const auto* p = std::get_if<Pointer>(&args[i])) {
      k += std::string(name_of(p->dtype)) + "|";
    } else {
      k += "s|";
    }
  }
  return k + options_key;
}

std::shared_ptr<Specialisation> KernelImpl::trace(std::span<const Argument> args) {
  Tracer tracer(name);
  std::vector<Value> values(args.size());
  {
    const TraceScope scope(&tracer);
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (params[i].constexpr_param) continue;
      const int id = tracer.new_value(param_type(params[i].kind, args[i]));
      std::string param_name = "p";
      param_name += std::to_string(i);
      tracer.function().params.push_back(Param{params[i].kind, id, std::move(param_name)});
      values[i] = Value::from_id(id);
    }
    body(values, args);
  }
  Function f = tracer.finish();
  verify(f);
  const bool locations = !options.strip_loc;
  if (options.print_ir) {
    std::fprintf(stderr, "// tl IR of %s after tracing\n%s", name.c_str(),
                 print(f, locations).c_str());
  }
  const std::vector<Pass> passes =
      options.run_passes ? pipeline(options.opt_level) : std::vector<Pass>{};
  for (const Pass& pass : passes) {
    if (options.print_ir_before_all) {
      std::fprintf(stderr, "// tl IR of %s before %s\n%s", name.c_str(), pass.name,
                   print(f, locations).c_str());
    }
    pass.run(f);
    if (options.debug) verify(f);
    if (options.print_ir) {
      std::fprintf(stderr, "// tl IR of %s after %s\n%s", name.c_str(), pass.name,
                   print(f, locations).c_str());
    }
  }
  if (options.print_ir_before_all) {  // what the backend receives
    std::fprintf(stderr, "// tl IR of %s before codegen\n%s", name.c_str(),
                 print(f, locations).c_str());
  }
  auto spec = std::make_shared<Specialisation>();
  spec->ir = print(f, options.debug && locations);
  spec->hash = hash_ir(f);
  if (!options.dump_dir.empty()) {
    std::filesystem::create_directories(options.dump_dir);
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(spec->hash));
    write_dump(options.dump_dir, file_stem(name) + "-" + hex + ".tlir", print(f, locations));
  }
  // The IR text itself, not its 64-bit hash: specialisations share an executable only when their
  // code is the same.
  const std::string exec_key = (options.debug ? print(f, false) : spec->ir) + "\n" + options_key;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = executables_.find(exec_key);
        it != executables_.end() && !options.always_compile) {
      spec->executable = it->second;
      return spec;
    }
  }
  spec->executable = prepare(std::move(f), options, name);
  const std::lock_guard<std::mutex> lock(mutex_);
  executables_.emplace(exec_key, spec->executable);
  return spec;
}

std::shared_ptr<const Specialisation> KernelImpl::specialise(std::span<const Argument> args) {
  check(args);
  const std::string k = key(args);
  if (!options.always_compile) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = cache_.find(k); it != cache_.end()) return it->second;
  }
  std::shared_ptr<const Specialisation> spec = trace(args);  // outside the lock: user code runs
  const std::lock_guard<std::mutex> lock(mutex_);
  return cache_.emplace(k, std::move(spec)).first->second;
}

}  // namespace detail

Kernel::Kernel(std::string name, std::vector<detail::TraceParam> params, Body body, Options options)
    : impl_(std::make_shared<detail::KernelImpl>()) {
  options.validate();
  // $TILEOPS_TL_DUMP_DIR dumps kernels that set no dump_dir, e.g. the operators' own.
  if (const std::optional<std::string> dir = knob("TILEOPS_TL_DUMP_DIR");
      options.dump_dir.empty() && dir && !dir->empty()) {
    options.dump_dir = *dir;
  }
  impl_->name = std::move(name);
  impl_->params = std::move(params);
  impl_->body = std::move(body);
  impl_->options = std::move(options);
  impl_->options_key = impl_->options.key();
}

void Kernel::launch_arguments(std::int64_t core_num, std::span<const Argument> args,
                              ThreadPool* pool) const {
  if (core_num < 0) {
    throw_argument_error(ErrorKind::kInvalidArgument, impl_->name, "core_num",
                         ">= 0 (0 = all cores)", std::to_string(core_num));
  }
  const auto spec = impl_->specialise(args);
  std::vector<Argument> runtime;  // ConstExprs were consumed by tracing
  runtime.reserve(args.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!impl_->params[i].constexpr_param) runtime.push_back(args[i]);
  }
  const Executable& exec = *spec->executable;
  ThreadPool& threads = pool != nullptr ? *pool : ThreadPool::global();
  exec.launch(core_num == 0 ? exec.all_cores(threads) : core_num, runtime, threads);
}

std::string Kernel::ir(std::span<const Argument> args) const { return impl_->specialise(args)->ir; }

std::size_t Kernel::num_specialisations() const { return impl_->size(); }

const Options& Kernel::options() const { return impl_->options; }

}  // namespace tileops::tl
