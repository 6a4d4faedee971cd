// RUN: triax-opt %s --dist-mesh="axes=dp=2,tp=4" -split-input-file -verify-diagnostics
// The axes are parsed as triaxc's --mesh is (the same code): bad sizes,
// unknown axes, repeated axes and meshes of
// more devices than C ints count are refused.
// RUN: not triax-opt %s --dist-mesh="axes=dp=-1" -split-input-file 2>&1 | FileCheck %s --check-prefix=NEG
// NEG: error: dist-mesh: axes=dp=-1: expected axis=size items such as dp=2,pp=2,tp=2 (sizes >= 1), got 'dp=-1'
// RUN: not triax-opt %s --dist-mesh="axes=dp=2,xp=2" -split-input-file 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: dist-mesh: axes=dp=2,xp=2: unknown axis 'xp'; the axes are dp, pp, ep, cp and tp
// RUN: not triax-opt %s --dist-mesh="axes=tp=2,tp=2" -split-input-file 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: error: dist-mesh: axes=tp=2,tp=2: axis 'tp' is given twice
// RUN: not triax-opt %s --dist-mesh="axes=dp=65536,tp=65536" -split-input-file 2>&1 | FileCheck %s --check-prefix=HUGE
// HUGE: error: dist-mesh: axes=dp=65536,tp=65536: the mesh dp=65536,tp=65536 has more than 2147483647 devices

// The axes are created in the table's order whatever the order given.
// RUN: echo 'module {}' | triax-opt --dist-mesh="axes=tp=2,pp=3,dp=4" | FileCheck %s --check-prefix=ORDER
// ORDER: dist.mesh @mesh <["dp"=4, "pp"=3, "tp"=2]>

// An existing mesh is kept; the sizes asked for must be its own.
// expected-error @+1 {{dist-mesh: mesh @cluster has tp=2 but tp=4 was asked for}}
dist.mesh @cluster <["dp"=2, "tp"=2]>

// -----

// expected-error @+1 {{dist-mesh: mesh @cluster has no axis "tp" but tp=4 was asked for}}
dist.mesh @cluster <["dp"=2]>

// -----

// A mesh that matches is left alone (no diagnostic).
dist.mesh @cluster <["dp"=2, "tp"=4]>

// -----

// expected-error @below {{dist-mesh: cannot create @mesh: the symbol is taken}}
module {
  func.func private @mesh()
}
