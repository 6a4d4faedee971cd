//===- StagePartition.cpp - The pipeline's stages by FLOPs ----------------===//

#include "triax/Dialect/Dist/Transforms/StagePartition.h"
#include "triax/Dialect/Triax/IR/Triax.h"

#include <limits>
#include <vector>

using namespace mlir;

double mlir::dist::forwardFlops(Operation *root) {
  double flops = 0;
  root->walk([&](triax::CostOpInterface op) { flops += op.getForwardFlops(); });
  return flops;
}

mlir::dist::BlockCosts
mlir::dist::weighBlocks(Block &body,
                        llvm::function_ref<bool(Operation *)> counts) {
  BlockCosts costs;
  bool afterBlocks = false;
  for (Operation &op : body) {
    if (counts && !counts(&op))
      continue;
    if (isa<triax::BlockOp>(op)) {
      costs.blocks.push_back(forwardFlops(&op));
      afterBlocks = true;
    } else {
      (afterBlocks ? costs.after : costs.before) += forwardFlops(&op);
    }
  }
  return costs;
}

llvm::SmallVector<int64_t> mlir::dist::balanceStages(ArrayRef<double> costs,
                                                     int64_t parts,
                                                     double first,
                                                     double last) {
  int64_t n = costs.size();
  llvm::SmallVector<double> prefix(n + 1, 0);
  for (int64_t i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + costs[i];
  const double inf = std::numeric_limits<double>::infinity();
  // best[k][j]: blocks [0, j) in k+1 groups; cut[k][j]: start of group k.
  std::vector<std::vector<double>> best(parts, std::vector<double>(n + 1, inf));
  std::vector<std::vector<int64_t>> cut(parts, std::vector<int64_t>(n + 1, 0));
  for (int64_t j = 1; j <= n; ++j)
    best[0][j] = prefix[j] + first + (parts == 1 ? last : 0);
  for (int64_t k = 1; k < parts; ++k)
    for (int64_t j = k + 1; j <= n; ++j)
      for (int64_t i = k; i < j; ++i) {
        double group = prefix[j] - prefix[i] + (k == parts - 1 ? last : 0);
        double cost = std::max(best[k - 1][i], group);
        if (cost < best[k][j]) {
          best[k][j] = cost;
          cut[k][j] = i;
        }
      }
  llvm::SmallVector<int64_t> counts(parts);
  int64_t end = n;
  for (int64_t k = parts - 1; k > 0; --k) {
    counts[k] = end - cut[k][end];
    end = cut[k][end];
  }
  counts[0] = end;
  return counts;
}
