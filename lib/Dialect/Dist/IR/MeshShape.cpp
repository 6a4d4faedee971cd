//===- MeshShape.cpp - The axis-role table and mesh shapes ----------------===//

#include "triax/Dialect/Dist/IR/MeshShape.h"

#include "triax/Dialect/Dist/IR/Dist.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

using namespace mlir;
using namespace mlir::dist;

// The axis-role table. Its order is the rank layout (ranks row-major over
// the axes, the last innermost): the axes that communicate every layer
// (tp, then cp) are neighbours, on one node; a data-parallel group, which
// communicates once per step, strides over everything else (Megatron-LM's
// layout, with dp outermost).
static const AxisRoleInfo kAxisRoles[] = {
    {TRX_AXIS_DATA, "dp", "data parallelism", true},
    {TRX_AXIS_PIPELINE, "pp", "pipeline parallelism", true},
    {TRX_AXIS_EXPERT, "ep", "expert parallelism", true},
    {TRX_AXIS_CONTEXT, "cp", "context parallelism", true},
    {TRX_AXIS_TENSOR, "tp", "tensor parallelism", true},
};
static_assert(std::size(kAxisRoles) == TRX_AXIS_NUM_ROLES,
              "one row per trx_axis_role");

ArrayRef<AxisRoleInfo> mlir::dist::axisRoles() { return kAxisRoles; }

const AxisRoleInfo &mlir::dist::axisRoleInfo(trx_axis_role role) {
  const AxisRoleInfo *row =
      llvm::find_if(kAxisRoles, [&](const auto &r) { return r.role == role; });
  assert(row != std::end(kAxisRoles) && "not an axis role");
  return *row;
}

StringRef mlir::dist::axisName(trx_axis_role role) {
  return axisRoleInfo(role).name;
}

trx_axis_role mlir::dist::axisRoleNamed(StringRef name) {
  for (const AxisRoleInfo &row : kAxisRoles)
    if (row.name == name)
      return row.role;
  return TRX_AXIS_NONE;
}

std::string mlir::dist::implementedAxisNames() {
  SmallVector<StringRef> names;
  for (const AxisRoleInfo &row : kAxisRoles)
    if (row.implemented)
      names.push_back(row.name);
  std::string out;
  for (auto [i, name] : llvm::enumerate(names))
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + name.str();
  return out;
}

FailureOr<MeshShape> MeshShape::parse(StringRef text, std::string &error) {
  MeshShape shape;
  SmallVector<StringRef> items;
  text.split(items, ',');
  for (StringRef item : items) {
    auto [name, value] = item.trim().split('=');
    int64_t size = 0;
    if (name.empty() || value.empty() || value.getAsInteger(10, size) ||
        size < 1) {
      error = ("expected axis=size items such as dp=2,pp=2,tp=2 (sizes >= "
               "1), got '" +
               item + "'")
                  .str();
      return failure();
    }
    trx_axis_role role = axisRoleNamed(name);
    if (role == TRX_AXIS_NONE) {
      error = ("unknown axis '" + name + "'; the axes are " +
               implementedAxisNames())
                  .str();
      return failure();
    }
    const AxisRoleInfo &row = axisRoleInfo(role);
    if (!row.implemented) {
      error =
          ("axis '" + name + "' (" + row.what +
           ") is not implemented yet; the axes are " + implementedAxisNames())
              .str();
      return failure();
    }
    if (shape.has(role)) {
      error = ("axis '" + name + "' is given twice").str();
      return failure();
    }
    if (size > kMaxDevices / shape.numDevices()) {
      error = ("the mesh " + text.trim() + " has more than " +
               Twine(kMaxDevices) + " devices")
                  .str();
      return failure();
    }
    shape.set(role, size);
  }
  return shape;
}

MeshShape MeshShape::of(MeshOp mesh) {
  MeshShape shape;
  for (auto [name, size] :
       llvm::zip(mesh.getAxisNames(), mesh.getAxisSizes())) {
    trx_axis_role role = axisRoleNamed(cast<StringAttr>(name).getValue());
    if (role != TRX_AXIS_NONE)
      shape.set(role, size);
  }
  return shape;
}

int64_t MeshShape::size(trx_axis_role role) const {
  for (const Axis &axis : axes_)
    if (axis.role == role)
      return axis.size;
  return 1;
}

bool MeshShape::has(trx_axis_role role) const {
  return llvm::any_of(axes_, [&](const Axis &a) { return a.role == role; });
}

void MeshShape::set(trx_axis_role role, int64_t size) {
  auto order = [](trx_axis_role r) {
    return &axisRoleInfo(r) - std::begin(kAxisRoles);
  };
  Axis *at = llvm::find_if(
      axes_, [&](const Axis &a) { return order(a.role) >= order(role); });
  if (at != axes_.end() && at->role == role)
    at->size = size;
  else
    axes_.insert(at, {role, size});
}

int64_t MeshShape::numDevices() const {
  int64_t n = 1;
  for (const Axis &axis : axes_)
    n *= axis.size;
  return n;
}

MeshShape MeshShape::withoutUnitAxes() const {
  MeshShape shape;
  for (const Axis &axis : axes_)
    if (axis.size > 1)
      shape.axes_.push_back(axis);
  return shape;
}

std::string MeshShape::str() const {
  std::string out;
  for (const Axis &axis : axes_)
    out += (out.empty() ? "" : ",") + axisName(axis.role).str() + "=" +
           std::to_string(axis.size);
  return out;
}
