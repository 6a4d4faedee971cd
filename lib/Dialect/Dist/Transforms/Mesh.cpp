//===- Mesh.cpp - dist-mesh: declare the device mesh ----------------------===//

#include "triax/Dialect/Dist/Transforms/Passes.h"

#include "triax/Dialect/Dist/IR/Dist.h"

#include "mlir/IR/Builders.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTMESH
#include "triax/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

namespace {
struct MeshPass : public mlir::dist::impl::DistMeshBase<MeshPass> {
  using DistMeshBase::DistMeshBase;
  void runOnOperation() override;
};
} // namespace

void MeshPass::runOnOperation() {
  ModuleOp module = getOperation();
  // The one order of the axes: tp innermost, then pp, then dp.
  std::pair<StringRef, int64_t> axes[] = {
      {"dp", dp.getValue()}, {"pp", pp.getValue()}, {"tp", tp.getValue()}};
  for (auto [name, size] : axes)
    if (size < 0) {
      module.emitError("dist-mesh: ")
          << name << "=" << size << " is not a size (expected >= 1)";
      return signalPassFailure();
    }
  SmallVector<MeshOp> meshes = llvm::to_vector(module.getOps<MeshOp>());
  if (meshes.size() > 1) {
    meshes[1].emitError("dist-mesh: the module has ")
        << meshes.size() << " meshes; expected at most one";
    return signalPassFailure();
  }
  if (!meshes.empty()) {
    MeshOp mesh = meshes.front();
    for (auto [name, size] : axes) {
      if (size == 0)
        continue;
      std::optional<int64_t> have = mesh.getAxisSize(name);
      if (have != size) {
        mesh.emitError("dist-mesh: mesh @")
            << mesh.getSymName() << " has "
            << (have ? (name + "=" + Twine(*have)).str()
                     : ("no axis \"" + name + "\"").str())
            << " but " << name << "=" << size << " was asked for";
        return signalPassFailure();
      }
    }
    return;
  }
  SmallVector<StringRef> names;
  SmallVector<int64_t> sizes;
  for (auto [name, size] : axes)
    if (size > 0) {
      names.push_back(name);
      sizes.push_back(size);
    }
  if (names.empty())
    return;
  if (module.lookupSymbol("mesh")) {
    module.emitError("dist-mesh: cannot create @mesh: the symbol is taken");
    return signalPassFailure();
  }
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  MeshOp::create(b, module.getLoc(), "mesh", b.getStrArrayAttr(names),
                 b.getDenseI64ArrayAttr(sizes));
}
