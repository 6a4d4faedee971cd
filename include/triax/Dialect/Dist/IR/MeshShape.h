//===- MeshShape.h - Mesh axes as data: roles, names, sizes -----*- C++ -*-===//
//
// A device mesh is an ordered list of named axes, each with a size and a
// role (triax_abi.h's trx_axis_role: data, pipeline, expert, context,
// tensor). The axis-role table (MeshShape.cpp) is the one place that names
// the roles ("dp", "pp", ...), orders them (the rank layout: the first
// outermost, the last innermost) and says which are implemented. triaxc's
// --mesh, the pass pipelines, dist-mesh, the planner, the reports, the
// model descriptor and (through the descriptor's roles) the runtime all
// use it; docs/parallelism.md "Adding a mesh axis" lists what a new role
// needs.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_DIALECT_DIST_IR_MESHSHAPE_H
#define TRIAX_DIALECT_DIST_IR_MESHSHAPE_H

#include "triax_abi.h"

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/LogicalResult.h"

#include <string>

namespace mlir::dist {
class MeshOp;

/// One row of the axis-role table.
struct AxisRoleInfo {
  trx_axis_role role;
  /// The axis's name in --mesh, in dist.mesh and in collectives' axes.
  llvm::StringLiteral name;
  /// What is split over it, for messages: "data parallelism".
  llvm::StringLiteral what;
  /// Whether the passes can split a model over it yet.
  bool implemented;
};

/// The axis-role table, in rank-layout order (first outermost).
llvm::ArrayRef<AxisRoleInfo> axisRoles();

/// The table's row of `role` (which must be a role, not TRX_AXIS_NONE).
const AxisRoleInfo &axisRoleInfo(trx_axis_role role);

/// The name of `role`'s axis: axisName(TRX_AXIS_DATA) is "dp".
llvm::StringRef axisName(trx_axis_role role);

/// The role of the axis named `name`; TRX_AXIS_NONE for a name not in the
/// table.
trx_axis_role axisRoleNamed(llvm::StringRef name);

/// The implemented axes' names as a sentence: "dp, pp and tp".
std::string implementedAxisNames();

/// The size of every axis of a mesh, by role, in the table's order.
class MeshShape {
public:
  struct Axis {
    trx_axis_role role;
    int64_t size;
  };

  /// The largest mesh: ranks are C ints (MPI, NCCL).
  static constexpr int64_t kMaxDevices = 2147483647;

  /// Parses "dp=2,pp=2,tp=2": axis=size items in any order, each axis at
  /// most once, of an implemented role, sizes >= 1, at most kMaxDevices
  /// devices in all. On failure `error` says why (no prefix, no newline).
  static FailureOr<MeshShape> parse(llvm::StringRef text, std::string &error);

  /// The axes of `mesh` that have a role (names not in the table are
  /// skipped).
  static MeshShape of(MeshOp mesh);

  /// The size of `role`'s axis; 1 when there is none.
  int64_t size(trx_axis_role role) const;
  /// Whether an axis of `role` was given (even of size 1).
  bool has(trx_axis_role role) const;
  /// Sets (adds, in table order) `role`'s axis.
  void set(trx_axis_role role, int64_t size);

  /// The product of the sizes.
  int64_t numDevices() const;
  /// The axes, in the table's order.
  llvm::ArrayRef<Axis> axes() const { return axes_; }
  /// The same mesh without its axes of size 1.
  MeshShape withoutUnitAxes() const;
  /// "dp=2,tp=2" (the form parse reads), axes in the table's order; "" for
  /// a mesh without axes.
  std::string str() const;

private:
  llvm::SmallVector<Axis, TRX_AXIS_NUM_ROLES> axes_;
};

} // namespace mlir::dist

#endif // TRIAX_DIALECT_DIST_IR_MESHSHAPE_H
