// Control flow for Python kernels: `for i in tl.range(...)` (an iterator that yields the
// induction Value once and closes the loop when the body ends), `tl.if_(cond, then, else_)`,
// `with tl.mask(count):`, and the pieces the AST front-end (tileops/_frontend.py) builds
// loop-carried names and runtime `if` statements from.
#include <pybind11/functional.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "python/src/tl_bindings.h"

namespace tileops::python {
namespace {

class PyRange;
thread_local std::vector<PyRange*> g_open;  // ranges of this thread's trace, innermost last
// _frontend.py's predicate: whether a code object is one it compiled (set once at import).
py::object* g_front_end_code = nullptr;

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
      if (!front_end_) watch_locals();
      it_.emplace(range_->begin());
      g_open.push_back(this);
      induction_ = (**it_).id();
      return **it_;
    }
    tl::Range::Iterator& it = *it_;  // engaged: opened by the first call
    done_ = true;
    forget();
    ++it;
    (void)(it != tl::Range::Sentinel{});  // closes the loop's region
    check_no_rebinding();
    throw py::stop_iteration();
  }

  // The AST front-end carries the names this loop rebinds itself.
  void set_front_end() { front_end_ = true; }

  // Ends a loop left open (break, an exception): the tl::Range marks the trace broken.
  void abandon() {
    forget();
    range_.reset();
  }

 private:
  void forget() { g_open.erase(std::remove(g_open.begin(), g_open.end(), this), g_open.end()); }

  // A loop the front-end did not compile (the kernel's source is unavailable, or a plain helper
  // function): names of the iterating frame are remembered, so that a rebinding in the body,
  // which a loop traced once cannot carry, is an error instead of a silent wrong answer.
  void watch_locals() {
    PyFrameObject* frame = PyEval_GetFrame();
    if (frame == nullptr) return;
    frame_ = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(frame));
    if (g_front_end_code != nullptr && (*g_front_end_code)(frame_.attr("f_code")).cast<bool>()) {
      // Compiled code iterates it, but not as a `for` statement's own iterable.
      fail_at(ErrorKind::kInvalidArgument, caller_loc(), "range",
              "a runtime loop must be the iterable of a `for` statement itself (`for i in "
              "tl.range(n):`), not wrapped in enumerate, zip, a generator or a comprehension: "
              "its body is traced once, and only a for statement's body can carry names");
    }
    const py::object locals = frame_.attr("f_locals");
    if (!PyDict_Check(locals.ptr())) return;
    before_ = py::reinterpret_steal<py::dict>(PyDict_Copy(locals.ptr()));  // a snapshot
    loc_ = caller_loc();
  }

  static bool carryable(py::handle v) {
    return (py::isinstance<tl::Value>(v) && !py::isinstance<tl::Var>(v)) || PyLong_Check(v.ptr()) ||
           PyFloat_Check(v.ptr());
  }

  void check_no_rebinding() {
    if (!frame_ || !before_) return;
    const py::object locals = frame_.attr("f_locals");
    frame_ = py::object();
    if (!PyDict_Check(locals.ptr())) return;
    const py::dict after = py::reinterpret_borrow<py::dict>(locals);
    for (const auto& [name, old] : before_) {
      if (!after.contains(name)) continue;
      const py::object now = after[name];
      if (now.is(old) || !carryable(old) || !carryable(now)) continue;
      if (py::isinstance<tl::Value>(now) && py::cast<const tl::Value&>(now).id() == induction_) {
        continue;  // the loop's own target
      }
      fail_at(ErrorKind::kInvalidArgument, loc_, "range",
              "'" + py::str(name).cast<std::string>() +
                  "' is bound before this loop and rebound in its body, in code that tileops.tl "
                  "did not compile from source (no source file, or a plain helper function): a "
                  "runtime loop is traced once, so the new value would not carry to the next "
                  "iteration. Define the kernel in a file, make the helper a @tl.jit "
                  "sub-kernel, or use tl.Var (v = tl.Var(init); v.set(...))");
    }
  }

  std::unique_ptr<tl::Range> range_;
  std::optional<tl::Range::Iterator> it_;
  bool done_ = false;
  bool front_end_ = false;
  int induction_ = -1;
  py::object frame_;
  py::dict before_ = py::reinterpret_steal<py::dict>(py::handle());
  tl::Loc loc_;
};

// tl::Branch for the front-end: its phases as methods, and adopt() for names first assigned
// inside a branch. The Vars it adopts are kept alive here until the branch is finished.
class PyBranch {
 public:
  explicit PyBranch(const py::object& cond) {
    const tl::Loc loc = caller_loc();
    branch_ = std::make_unique<tl::Branch>(to_operand(cond, loc, "if", "condition"), loc);
  }
  void then_begin() { branch_->then_begin(); }
  void then_end() { branch_->then_end(); }
  void else_begin() { branch_->else_begin(); }
  void else_end() { branch_->else_end(); }
  void finish() {
    branch_->finish();
    adopted_.clear();
  }
  void adopt(py::object var) {
    branch_->adopt(py::cast<tl::Var&>(var));
    adopted_.push_back(std::move(var));
  }

 private:
  std::unique_ptr<tl::Branch> branch_;
  std::vector<py::object> adopted_;
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
      .def("__next__", &PyRange::next)
      .def("_set_front_end", &PyRange::set_front_end);
  py::class_<PyBranch>(tl, "_Branch")
      .def(py::init<py::object>(), py::arg("cond"))
      .def("then_begin", &PyBranch::then_begin)
      .def("then_end", &PyBranch::then_end)
      .def("else_begin", &PyBranch::else_begin)
      .def("else_end", &PyBranch::else_end)
      .def("finish", &PyBranch::finish)
      .def("adopt", &PyBranch::adopt, py::arg("var"));
  tl.def(
      "_set_front_end_code_check",
      [](py::object check) {
        static py::object* held = new py::object();  // never destroyed: outlives interpreter exit
        *held = std::move(check);
        g_front_end_code = held;
      },
      "Sets the predicate telling code the AST front-end compiled (tileops/_frontend.py).");
  tl.def(
      "_value_id", [](const tl::Value& v) { return v.id(); },
      "The id of a Value in its trace (ids grow as the trace goes on).");
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
