// Control flow for Python kernels: `for i in tl.range(...)` (an iterator that yields the
// induction Value once and closes the loop when the body ends), `tl.if_(cond, then, else_)` and
// `with tl.mask(count):`.
#include <pybind11/functional.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "python/src/tl_bindings.h"

namespace tileops::python {
namespace {

class PyRange;
thread_local std::vector<PyRange*> g_open;  // ranges of this thread's trace, innermost last

class PyRange {
 public:
  PyRange(const tl::Operand& start, const tl::Operand& stop, const tl::Operand& step,
          tl::RangeOptions options, const tl::Loc& loc)
      : range_(std::make_unique<tl::Range>(start, stop, step, options, loc)) {}
  ~PyRange() { abandon(); }
  PyRange(const PyRange&) = delete;
  PyRange& operator=(const PyRange&) = delete;

  // First call: opens the loop and yields the induction variable. Second call: the body has
  // been traced once; closes the loop (loop-carried Vars become its results) and stops.
  tl::Value next() {
    if (range_ == nullptr || done_) throw py::stop_iteration();
    if (!it_) {
      it_.emplace(range_->begin());
      g_open.push_back(this);
      return **it_;
    }
    done_ = true;
    forget();
    ++*it_;
    (void)(*it_ != tl::Range::Sentinel{});  // closes the loop's region
    throw py::stop_iteration();
  }

  // Ends a loop left open (break, an exception): the tl::Range marks the trace broken.
  void abandon() {
    forget();
    range_.reset();
  }

 private:
  void forget() { g_open.erase(std::remove(g_open.begin(), g_open.end(), this), g_open.end()); }

  std::unique_ptr<tl::Range> range_;
  std::optional<tl::Range::Iterator> it_;
  bool done_ = false;
};

class PyMask {
 public:
  explicit PyMask(py::object count) : count_(std::move(count)) {}
  void enter() {
    const tl::Loc loc = caller_loc();
    mask_ = std::make_unique<tl::Mask>(to_operand(count_, loc, "mask", "count"), loc);
  }
  void exit() { mask_.reset(); }

 private:
  py::object count_;
  std::unique_ptr<tl::Mask> mask_;
};

// `with tl.if_(cond):` then `with tl.else_():`. Leaving the then-block appends the `if` op at
// once (code after it must see the branch results); an else-block directly after takes it back
// (tl::Branch::reopen_else). The thread's last branch stays reachable for tl.else_() until the
// trace ends.
class PyIf {
 public:
  explicit PyIf(py::object cond) : cond_(std::move(cond)) {}
  std::shared_ptr<tl::Branch>& branch() { return branch_; }

 private:
  py::object cond_;
  std::shared_ptr<tl::Branch> branch_;
  friend void enter_if(const std::shared_ptr<PyIf>& block);
};

thread_local std::shared_ptr<tl::Branch> g_last_branch;  // for tl.else_()

void enter_if(const std::shared_ptr<PyIf>& block) {
  const tl::Loc loc = caller_loc();
  block->branch_ = std::make_shared<tl::Branch>(to_operand(block->cond_, loc, "if_", "cond"), loc);
  g_last_branch.reset();
  block->branch_->then_begin();
}

bool exit_if(PyIf& block, const py::handle& error) {
  if (!error.is_none() || block.branch() == nullptr) return false;  // the trace is failing
  block.branch()->then_end();
  block.branch()->finish();
  g_last_branch = block.branch();
  return false;
}

class PyElse {
 public:
  void enter() {
    const tl::Loc loc = caller_loc();
    if (g_last_branch == nullptr) {
      fail_at(ErrorKind::kInvalidArgument, loc, "else_",
              "must directly follow a `with tl.if_(cond):` block");
    }
    branch_ = std::move(g_last_branch);
    branch_->reopen_else(loc);
    branch_->else_begin();
  }
  bool exit(const py::handle& error) {
    if (!error.is_none() || branch_ == nullptr) return false;
    branch_->else_end();
    branch_->finish();
    branch_.reset();
    return false;
  }

 private:
  std::shared_ptr<tl::Branch> branch_;
};

// A Python callable as a branch body; None is an empty branch.
std::function<void()> branch(py::handle fn, const tl::Loc& loc, const char* arg) {
  if (fn.is_none()) return {};
  if (!PyCallable_Check(fn.ptr())) {
    fail_at(ErrorKind::kInvalidType, loc, "if_",
            std::string(arg) + " must be a callable taking no arguments (or None)");
  }
  return [f = py::reinterpret_borrow<py::object>(fn)] { f(); };
}

}  // namespace

std::size_t open_ranges() { return g_open.size(); }

void abandon_ranges(std::size_t keep) {
  while (g_open.size() > keep) g_open.back()->abandon();
  g_last_branch.reset();  // an else_ never reaches back into a finished trace
}

void bind_tl_control(py::module_& tl) {
  py::class_<PyRange>(tl, "_Range")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &PyRange::next);
  tl.def(
      "range",
      [](py::handle start, py::handle stop, py::handle step, int unroll_factor, bool parallel) {
        const tl::Loc loc = caller_loc();
        const py::int_ zero(0);
        const py::handle first = stop.is_none() ? py::handle(zero) : start;
        const py::handle last = stop.is_none() ? start : stop;
        return std::make_unique<PyRange>(
            to_operand(first, loc, "range", "start"), to_operand(last, loc, "range", "stop"),
            to_operand(step, loc, "range", "step"), tl::RangeOptions{unroll_factor, parallel}, loc);
      },
      py::arg("start"), py::arg("stop") = py::none(), py::arg("step") = 1,
      py::arg("unroll_factor") = 1, py::arg("parallel") = false,
      "A runtime loop, traced once: `for i in tl.range(n):`. parallel=True promises "
      "independent iterations (rejected when the body carries a tl.Var).");
  py::class_<PyIf, std::shared_ptr<PyIf>>(tl, "_If")
      .def("__enter__", &enter_if)
      .def("__exit__", [](PyIf& block, const py::handle&, const py::handle& error,
                          const py::handle&) { return exit_if(block, error); });
  py::class_<PyElse>(tl, "_Else")
      .def("__enter__", &PyElse::enter)
      .def("__exit__", [](PyElse& block, const py::handle&, const py::handle& error,
                          const py::handle&) { return block.exit(error); });
  tl.def(
      "if_",
      [](const py::object& cond, py::handle then_branch, py::handle else_branch) -> py::object {
        if (then_branch.is_none() && else_branch.is_none()) {
          return py::cast(std::make_shared<PyIf>(cond));  // `with tl.if_(cond):`
        }
        const tl::Loc loc = caller_loc();
        tl::if_(to_operand(cond, loc, "if_", "cond"), branch(then_branch, loc, "then"),
                branch(else_branch, loc, "else_"), loc);
        return py::none();
      },
      py::arg("cond"), py::arg("then") = py::none(), py::arg("else_") = py::none(),
      "A runtime branch on a scalar. Function form: calls then() / else_() once each while "
      "tracing (a trace-time condition traces one branch only). Block form: `with "
      "tl.if_(cond):` ... `with tl.else_():` ... (both blocks always traced). tl.Vars set in "
      "a branch become its results.");
  tl.def(
      "else_", [] { return PyElse(); },
      "`with tl.else_():` right after a `with tl.if_(cond):` block.");
  py::class_<PyMask>(tl, "mask",
                     "`with tl.mask(count):` limits stores and atomics to the first `count` "
                     "lanes (row-major).")
      .def(py::init<py::object>(), py::arg("count"))
      .def("__enter__", [](PyMask& m) { m.enter(); })
      .def("__exit__", [](PyMask& m, const py::args&) {
        m.exit();
        return false;
      });
}

}  // namespace tileops::python
