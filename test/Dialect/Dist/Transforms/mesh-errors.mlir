// RUN: triax-opt %s --dist-mesh="dp=2 tp=4" -split-input-file -verify-diagnostics
// RUN: not triax-opt %s --dist-mesh="dp=-1" -split-input-file 2>&1 | FileCheck %s --check-prefix=NEG
// NEG: error: dist-mesh: dp=-1 is not a size (expected >= 1)

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
