// swap_blocks and copy_blocks beyond their declarations: the source and destination blocks
// have one shape, and every block id of the mapping is a block of its tensor. The ids are data:
// `check` reads them for a call, `check_data` again for each run of a prepared operator, so no
// kernel ever indexes outside a tensor.
#include <string>

#include "src/ops/contracts/copy_blocks.decl.h"
#include "src/ops/contracts/swap_blocks.decl.h"
#include "src/ops/framework/arg_check.h"
#include "src/ops/framework/attention_layout.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

// Argument positions, by name from the declarations.
constexpr int kSrc = tensor_index(decls::swap_blocks, "src");
constexpr int kDst = tensor_index(decls::swap_blocks, "dst");
constexpr int kSwapMapping = tensor_index(decls::swap_blocks, "block_mapping");
constexpr int kCache = tensor_index(decls::copy_blocks, "cache");
constexpr int kCopyMapping = tensor_index(decls::copy_blocks, "block_mapping");

// Every row of block_mapping [n, 2] names a block of src (column 0) and of dst (column 1).
void check_ids(const ArgCheck& check, const Tensor& mapping, std::int64_t src_blocks,
               std::string_view src, std::int64_t dst_blocks, std::string_view dst) {
  for (std::int64_t i = 0; i < mapping.size(0); ++i) {
    for (int column : {0, 1}) {
      const std::int64_t id = index_at(mapping, i, column);
      const std::int64_t blocks = column == 0 ? src_blocks : dst_blocks;
      if (id < 0 || id >= blocks) {
        check.fail(ErrorKind::kInvalidArgument, "block_mapping",
                   "block ids in [0, " + std::to_string(blocks) + ") (" +
                       std::string(column == 0 ? src : dst) + "'s blocks) in column " +
                       std::to_string(column),
                   std::to_string(id) + " at row " + std::to_string(i));
      }
    }
  }
}

void check_mapping_shape(const ArgCheck& check, const Tensor& mapping) {
  if (mapping.size(1) != 2) {
    check.fail(ErrorKind::kInvalidArgument, "block_mapping", "[n, 2] (src block, dst block) rows",
               mapping.shape().to_string());
  }
}

void swap_data(const ArgCheck& check, std::span<const Tensor> t) {
  check_ids(check, t[kSwapMapping], t[kSrc].size(0), "src", t[kDst].size(0), "dst");
}
void swap_check(const ArgCheck& check, std::span<const Tensor> t, std::span<double>) {
  const Tensor& src = t[kSrc];
  const Tensor& dst = t[kDst];
  Dims block = src.shape();
  block[0] = dst.size(0);
  check.shape_is(dst, "dst", block, "src's block shape (all dims but the first)");
  check_mapping_shape(check, t[kSwapMapping]);
  swap_data(check, t);
}

void copy_data(const ArgCheck& check, std::span<const Tensor> t) {
  check_ids(check, t[kCopyMapping], t[kCache].size(0), "cache", t[kCache].size(0), "cache");
}
void copy_check(const ArgCheck& check, std::span<const Tensor> t, std::span<double>) {
  check_mapping_shape(check, t[kCopyMapping]);
  copy_data(check, t);
}

}  // namespace

namespace contracts {
extern constinit const DeclaredOp swap_blocks{decls::swap_blocks,
                                              {.check = swap_check, .check_data = swap_data}};
extern constinit const DeclaredOp copy_blocks{decls::copy_blocks,
                                              {.check = copy_check, .check_data = copy_data}};
}  // namespace contracts

}  // namespace tileops::ops
