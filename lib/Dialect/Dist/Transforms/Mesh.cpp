//===- Mesh.cpp - dist-mesh: declare the device mesh ----------------------===//

#include "triax/Dialect/Dist/Transforms/Passes.h"

#include "triax/Dialect/Dist/IR/Dist.h"
#include "triax/Dialect/Dist/IR/MeshShape.h"

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
  MeshShape shape;
  if (!axes.empty()) {
    std::string error;
    FailureOr<MeshShape> parsed = MeshShape::parse(axes.getValue(), error);
    if (failed(parsed)) {
      module.emitError("dist-mesh: axes=") << axes.getValue() << ": " << error;
      return signalPassFailure();
    }
    shape = *parsed;
  }
  SmallVector<MeshOp> meshes = llvm::to_vector(module.getOps<MeshOp>());
  if (meshes.size() > 1) {
    meshes[1].emitError("dist-mesh: the module has ")
        << meshes.size() << " meshes; expected at most one";
    return signalPassFailure();
  }
  if (!meshes.empty()) {
    MeshOp mesh = meshes.front();
    for (MeshShape::Axis axis : shape.axes()) {
      StringRef name = axisName(axis.role);
      std::optional<int64_t> have = mesh.getAxisSize(name);
      if (have != axis.size) {
        mesh.emitError("dist-mesh: mesh @")
            << mesh.getSymName() << " has "
            << (have ? (name + "=" + Twine(*have)).str()
                     : ("no axis \"" + name + "\"").str())
            << " but " << name << "=" << axis.size << " was asked for";
        return signalPassFailure();
      }
    }
    return;
  }
  if (shape.axes().empty())
    return;
  SmallVector<StringRef> names;
  SmallVector<int64_t> sizes;
  for (MeshShape::Axis axis : shape.axes()) {
    names.push_back(axisName(axis.role));
    sizes.push_back(axis.size);
  }
  if (module.lookupSymbol("mesh")) {
    module.emitError("dist-mesh: cannot create @mesh: the symbol is taken");
    return signalPassFailure();
  }
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  MeshOp::create(b, module.getLoc(), "mesh", b.getStrArrayAttr(names),
                 b.getDenseI64ArrayAttr(sizes));
}
