// Result types of IR ops, with every operand check the language makes. The builder calls it for
// each op it appends (so a wrong kernel fails at the line that wrote it) and the verifier calls
// it again over a whole function (IR from passes or the Python front-end).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tileops/core/error.h"
#include "tileops/tl/ir.h"

namespace tileops::tl {

// Throws Error "tl: <file>:<line>: '<construct>': <message>".
[[noreturn]] void trace_error(ErrorKind kind, const SourceLoc& loc, std::string_view construct,
                              const std::string& message);

// The construct an op came from, as users spell it ("load", "exp", "reduce_sum", "range").
std::string construct_name(const Op& op);

// Whether a value of dtype `from` may be read as `to` bit for bit (Value::bitcast): the same size,
// neither bool nor an 8-bit float format.
bool bitcast_compatible(DataType from, DataType to);

std::string shape_string(const std::vector<std::int64_t>& shape);
// NumPy broadcasting of two static shapes; throws naming `construct` when incompatible.
std::vector<std::int64_t> broadcast_shapes(const std::vector<std::int64_t>& a,
                                           const std::vector<std::int64_t>& b, const Op& op);

// Checks `op`'s operands and attributes against `function`'s value types and returns the types of
// its results. Regions of for/if are checked for their argument and yield types only.
std::vector<Type> infer_result_types(const Function& function, const Op& op);

// Checks the uses of every tile loaded with a TileLocation against what that memory allows
// (tile_locations.cc); throws naming the offending use's construct and source location.
void verify_tile_locations(const Function& function);

}  // namespace tileops::tl
