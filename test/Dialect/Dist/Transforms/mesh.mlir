// dist-mesh declares the mesh in the one axis order (the axis-role table's:
// dp, pp, ep, cp, tp; tp innermost), whatever order the axes come in; no
// axes, no mesh.
// RUN: triax-opt %s --dist-mesh="axes=tp=2,dp=4" | FileCheck %s
// RUN: triax-opt %s --dist-mesh="axes=pp=2" | FileCheck %s --check-prefix=PP
// RUN: triax-opt %s --dist-mesh | FileCheck %s --check-prefix=NONE
// CHECK: dist.mesh @mesh <["dp"=4, "tp"=2]>
// PP: dist.mesh @mesh <["pp"=2]>
// NONE-NOT: dist.mesh
module {
}
