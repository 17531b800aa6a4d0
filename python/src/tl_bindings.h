// Bindings of the tile language (tileops::tl) as tileops._C.tl, the engine under the Python
// front-end python/tileops/tl.py. Every traced call records the source location of the user's
// Python line (the innermost frame outside the tileops package), so trace and verifier errors
// point at the kernel's line, not at the bindings.
#pragma once

#include <pybind11/pybind11.h>

#include <string_view>
#include <vector>

#include "tileops/core/error.h"
#include "tileops/tl.h"

namespace tileops::python {

namespace py = pybind11;

// Values, Vars, dtypes and round modes (tl_values.cc); tl functions (tl_functions.cc and
// tl_nn_functions.cc); range, if_ and mask (tl_control.cc); kernels and launch (tl_kernel.cc).
void bind_tl_values(py::module_& tl);
void bind_tl_functions(py::module_& tl);
void bind_tl_nn_functions(py::module_& tl);
void bind_tl_control(py::module_& tl);
void bind_tl_kernel(py::module_& tl);

// The user's line calling into tl: the innermost Python frame whose file is not inside the
// tileops package (set by tileops/tl.py). File and function names are interned, so the Loc
// stays valid for the life of the process (tl::Range keeps its Loc until the loop closes).
tl::Loc caller_loc();
void set_package_dir(std::string_view dir);

// "tl: file.py:12: 'construct': message" as tileops::Error of `kind`.
[[noreturn]] void fail_at(ErrorKind kind, const tl::Loc& loc, std::string_view construct,
                          std::string_view message);

// A Value, Var or Python number (bool, int, float, numpy scalar) as an operand of `construct`;
// anything else is a TypeError naming the argument.
tl::Operand to_operand(py::handle obj, const tl::Loc& loc, std::string_view construct,
                       std::string_view arg);
tl::Value to_value(py::handle obj, const tl::Loc& loc, std::string_view construct,
                   std::string_view arg);
// An int, Value or sequence of them (shapes, offsets, strides).
std::vector<tl::Operand> to_operands(py::handle obj, const tl::Loc& loc, std::string_view construct,
                                     std::string_view arg);
// A tl.DataType, dtype name, numpy dtype or torch.dtype.
DataType to_dtype(py::handle obj, std::string_view construct, std::string_view arg);
// A number known when tracing (a Python or numpy int or float, a ConstExpr's value): a runtime
// scalar or anything else is a TypeError naming the argument.
double to_number(py::handle obj, const tl::Loc& loc, std::string_view construct,
                 std::string_view arg);
// An int or a sequence of ints (reduction dims, permutations); None gives an empty list.
std::vector<int> to_ints(py::handle obj, const tl::Loc& loc, std::string_view construct,
                         std::string_view arg);
// One int (a dim, an axis): Python or numpy ints; a bool, float or sequence is a TypeError.
int to_int(py::handle obj, const tl::Loc& loc, std::string_view construct, std::string_view arg);
// asc2's varargs lists (`reshape(x, 4, 16)`, `transpose(x, 1, 0)`, `reduce_sum(x, 0, 1)`): the
// positional `items`, or the keyword argument (None when absent) that may replace them. One item
// is returned as it is (an int or a sequence), several as a tuple, none as None; both given is a
// ValueError.
py::object one_list(const py::args& items, py::handle keyword, std::string_view keyword_name,
                    const tl::Loc& loc, std::string_view construct);
// Axes (reduction dims, a permutation) from one_list; a bool among the positional items is a
// TypeError saying that keep_dims is keyword-only. None or nothing gives an empty list.
std::vector<int> to_axes(const py::args& axes, py::handle keyword, std::string_view keyword_name,
                         const tl::Loc& loc, std::string_view construct);
// A Python bool or numpy.bool_ (which numpy still lets pass as an index).
bool is_bool(py::handle obj);

// The asc2 call forms shared by the tl functions and the Value methods (tl_nn_functions.cc):
// reductions over axes given as varargs, an int, a sequence or dims=/axis= (keep_dims keyword
// only), transpose by varargs or a permutation, reshape by varargs or a shape.
tl::Value reduce_call(tl::ReduceOp op, py::handle x, const py::args& axes, py::handle dims,
                      py::handle axis, bool keep_dims);
tl::Value transpose_call(py::handle x, const py::args& axes, py::handle permutation);
tl::Value reshape_call(py::handle x, const py::args& shape, py::handle shape_kw);

// The Ranges of the trace running on this thread that are still open: a kernel body that
// raised (or kept a tl.range iterator past `break`) leaves some; the kernel closes them while
// its tracer is still active so that no builder state leaks into the next trace.
std::size_t open_ranges();
void abandon_ranges(std::size_t keep);

// Python number protocol conversions of any object (numpy scalars included); a Python error
// propagates as py::error_already_set.
std::int64_t index_of(py::handle obj);
double float_of(py::handle obj);
bool truth_of(py::handle obj);

}  // namespace tileops::python
