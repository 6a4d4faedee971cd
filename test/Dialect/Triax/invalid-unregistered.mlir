// The triax.block branch that needs a terminator other than triax.yield: no
// registered terminator may end a triax.block, so the test uses an
// unregistered one.
// RUN: triax-opt %s -split-input-file -verify-diagnostics --allow-unregistered-dialect

func.func @f(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'triax.block' op region must end in triax.yield}}
  %y = triax.block "h.0" (%x) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  ^bb0(%in: tensor<2x4x8xf32>):
    "test.terminator"(%in) : (tensor<2x4x8xf32>) -> ()
  }
  return
}

// -----

// A registered terminator of another op is refused by its own parent check
// first.
func.func @f(%x: tensor<2x4x8xf32>) {
  %y = triax.block "h.0" (%x) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  ^bb0(%in: tensor<2x4x8xf32>):
    // expected-error @+1 {{'func.return' op expects parent op 'func.func'}}
    func.return %in : tensor<2x4x8xf32>
  }
  return
}
