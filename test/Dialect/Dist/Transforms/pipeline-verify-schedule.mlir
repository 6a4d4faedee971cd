// dist-verify-schedule executes each stage's sends and recvs (the cases of a
// switch on the pp coordinate) with blocking semantics and rejects a
// schedule that can deadlock or whose messages do not match.
// RUN: triax-opt %s -split-input-file --dist-verify-schedule -verify-diagnostics

// A schedule that matches: stage 0 sends two tagged activations, stage 1
// receives them in the same order and sends a gradient back.
dist.mesh @mesh <["pp"=2]>
func.func @ok(%x: tensor<4xf32>) {
  %stage = dist.axis_index @mesh ["pp"] : index
  scf.index_switch %stage
  case 0 {
    dist.send %x over @mesh ["pp"] to 1 tag 0 : tensor<4xf32>
    dist.send %x over @mesh ["pp"] to 1 tag 2 : tensor<4xf32>
    %g = dist.recv over @mesh ["pp"] from 1 tag 1 : tensor<4xf32>
    scf.yield
  }
  case 1 {
    %a = dist.recv over @mesh ["pp"] from 0 tag 0 : tensor<4xf32>
    %b = dist.recv over @mesh ["pp"] from 0 tag 2 : tensor<4xf32>
    dist.send %a over @mesh ["pp"] to 0 tag 1 : tensor<4xf32>
    scf.yield
  }
  default {
  }
  return
}

// -----

// The crossed pair: stage 0 sends A then B, stage 1 receives B then A.
dist.mesh @mesh <["pp"=2]>
func.func @crossed(%x: tensor<4xf32>) {
  %stage = dist.axis_index @mesh ["pp"] : index
  scf.index_switch %stage
  case 0 {
    // expected-error @+1 {{dist-verify-schedule: deadlock: stage 0 blocks in this send (send to stage 1 with tag 0), while stage 1 waits in a recv from stage 0 with tag 2}}
    dist.send %x over @mesh ["pp"] to 1 tag 0 : tensor<4xf32>
    dist.send %x over @mesh ["pp"] to 1 tag 2 : tensor<4xf32>
    scf.yield
  }
  case 1 {
    // expected-note @+1 {{stage 1 waits in this recv}}
    %b = dist.recv over @mesh ["pp"] from 0 tag 2 : tensor<4xf32>
    %a = dist.recv over @mesh ["pp"] from 0 tag 0 : tensor<4xf32>
    scf.yield
  }
  default {
  }
  return
}

// -----

// Naive 1F1B on two stages: both send first (stage 0 the next activation,
// stage 1 the first gradient), so neither reaches its recv.
dist.mesh @mesh <["pp"=2]>
func.func @both_send(%x: tensor<4xf32>) {
  %stage = dist.axis_index @mesh ["pp"] : index
  scf.index_switch %stage
  case 0 {
    dist.send %x over @mesh ["pp"] to 1 tag 0 : tensor<4xf32>
    // expected-error @+1 {{deadlock: stage 0 blocks in this send (send to stage 1 with tag 2), while stage 1 waits in a send to stage 0 with tag 1}}
    dist.send %x over @mesh ["pp"] to 1 tag 2 : tensor<4xf32>
    %g0 = dist.recv over @mesh ["pp"] from 1 tag 1 : tensor<4xf32>
    %g1 = dist.recv over @mesh ["pp"] from 1 tag 3 : tensor<4xf32>
    scf.yield
  }
  case 1 {
    %a0 = dist.recv over @mesh ["pp"] from 0 tag 0 : tensor<4xf32>
    // expected-note @+1 {{stage 1 waits in this send}}
    dist.send %a0 over @mesh ["pp"] to 0 tag 1 : tensor<4xf32>
    %a1 = dist.recv over @mesh ["pp"] from 0 tag 2 : tensor<4xf32>
    dist.send %a1 over @mesh ["pp"] to 0 tag 3 : tensor<4xf32>
    scf.yield
  }
  default {
  }
  return
}

// -----

// Same tag, different types.
dist.mesh @mesh <["pp"=2]>
func.func @types(%x: tensor<4xf32>) {
  %stage = dist.axis_index @mesh ["pp"] : index
  scf.index_switch %stage
  case 0 {
    // expected-error @+1 {{stage 0 sends 'tensor<4xf32>' to stage 1 but the matching recv expects 'tensor<8xf32>'}}
    dist.send %x over @mesh ["pp"] to 1 tag 0 : tensor<4xf32>
    scf.yield
  }
  case 1 {
    // expected-note @+1 {{the recv of stage 1}}
    %a = dist.recv over @mesh ["pp"] from 0 tag 0 : tensor<8xf32>
    scf.yield
  }
  default {
  }
  return
}

// -----

// A send nobody receives.
dist.mesh @mesh <["pp"=2]>
func.func @unmatched(%x: tensor<4xf32>) {
  %stage = dist.axis_index @mesh ["pp"] : index
  scf.index_switch %stage
  case 0 {
    // expected-error @+1 {{stage 0 blocks in this send (send to stage 1 with tag 0), but stage 1 has finished: no matching recv}}
    dist.send %x over @mesh ["pp"] to 1 tag 0 : tensor<4xf32>
    scf.yield
  }
  default {
  }
  return
}

// -----

// A peer outside the axis.
dist.mesh @mesh <["pp"=2]>
func.func @peer(%x: tensor<4xf32>) {
  %stage = dist.axis_index @mesh ["pp"] : index
  scf.index_switch %stage
  case 0 {
    // expected-error @+1 {{dist-verify-schedule: stage 0 exchanges with stage 0, not a peer on "pp" of size 2}}
    dist.send %x over @mesh ["pp"] to 0 tag 0 : tensor<4xf32>
    scf.yield
  }
  default {
  }
  return
}

// -----

// A send inside a loop of a case cannot be unrolled by the checker.
dist.mesh @mesh <["pp"=2]>
func.func @nested(%x: tensor<4xf32>) {
  %stage = dist.axis_index @mesh ["pp"] : index
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  scf.index_switch %stage
  case 0 {
    scf.for %i = %c0 to %c2 step %c1 {
      // expected-error @+1 {{dist-verify-schedule: a send or recv nested in control flow inside a stage's case cannot be checked}}
      dist.send %x over @mesh ["pp"] to 1 tag 0 : tensor<4xf32>
    }
    scf.yield
  }
  default {
  }
  return
}

// -----

// dist.axis_index names exactly one axis.
dist.mesh @mesh <["dp"=2, "pp"=2]>
func.func @two_axes() -> index {
  // expected-error @+1 {{'dist.axis_index' op expects exactly one mesh axis, got 2}}
  %i = dist.axis_index @mesh ["dp", "pp"] : index
  return %i : index
}

// -----

// The tied-gradient exchange of a per-stage optimizer step (dist-pipeline),
// as it is built (%w: each stage's part of the gradient): the lower stage
// sends first, the higher receives first.
dist.mesh @mesh <["pp"=2]>
func.func @tied_exchange(%lr: f32, %w: tensor<4xf32>) -> f32 {
  %stage = dist.axis_index @mesh ["pp"] : index
  %r = scf.index_switch %stage -> f32
  case 0 {
    dist.send %w over @mesh ["pp"] to 1 tag 8 : tensor<4xf32>
    %p = dist.recv over @mesh ["pp"] from 1 tag 8 : tensor<4xf32>
    scf.yield %lr : f32
  }
  case 1 {
    %p = dist.recv over @mesh ["pp"] from 0 tag 8 : tensor<4xf32>
    dist.send %w over @mesh ["pp"] to 0 tag 8 : tensor<4xf32>
    scf.yield %lr : f32
  }
  default {
    scf.yield %lr : f32
  }
  return %r : f32
}

// -----

// Both tied stages sending first would deadlock with blocking send/recv.
dist.mesh @mesh <["pp"=2]>
func.func @tied_exchange_both_send(%lr: f32, %w: tensor<4xf32>) -> f32 {
  %stage = dist.axis_index @mesh ["pp"] : index
  %r = scf.index_switch %stage -> f32
  case 0 {
    // expected-error @+1 {{dist-verify-schedule: deadlock: stage 0 blocks in this send (send to stage 1 with tag 8), while stage 1 waits in a send to stage 0 with tag 8}}
    dist.send %w over @mesh ["pp"] to 1 tag 8 : tensor<4xf32>
    %p = dist.recv over @mesh ["pp"] from 1 tag 8 : tensor<4xf32>
    scf.yield %lr : f32
  }
  case 1 {
    // expected-note @+1 {{stage 1 waits in this send}}
    dist.send %w over @mesh ["pp"] to 0 tag 8 : tensor<4xf32>
    %p = dist.recv over @mesh ["pp"] from 0 tag 8 : tensor<4xf32>
    scf.yield %lr : f32
  }
  default {
    scf.yield %lr : f32
  }
  return %r : f32
}
