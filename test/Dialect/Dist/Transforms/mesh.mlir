// dist-mesh declares the mesh in the one axis order (dp, pp, tp: tp
// innermost), whatever order the options come in; sizes 0 leave an axis out.
// RUN: triax-opt %s --dist-mesh="tp=2 dp=4" | FileCheck %s
// RUN: triax-opt %s --dist-mesh="pp=2" | FileCheck %s --check-prefix=PP
// RUN: triax-opt %s --dist-mesh | FileCheck %s --check-prefix=NONE
// CHECK: dist.mesh @mesh <["dp"=4, "tp"=2]>
// PP: dist.mesh @mesh <["pp"=2]>
// NONE-NOT: dist.mesh
module {
}
