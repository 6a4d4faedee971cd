// Found by triax-fuzz (CI, 2026-12-06); upstream's fault, not Triax's: MLIR
// 22's parser sizes a SmallVector by a use's result number before it checks
// that number against the op's results, so `%x#2147483647` asks for 32 GiB
// and ends the process ("LLVM ERROR: out of memory", an AddressSanitizer
// out-of-memory report in the fuzz build) instead of an error. The address
// space is capped so that the failure does not depend on the machine's
// memory or overcommit. Expected to fail until a fixed MLIR reports an
// error; an unexpected pass means it does, and this file can become a
// plain test.
// XFAIL: *
// RUN: ulimit -v 4000000; not triax-opt %s 2>&1 | FileCheck %s
// CHECK: error:
// CHECK-NOT: {{Stack dump|PLEASE submit}}

func.func @f(%a: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x:2 = scf.for %i = %c0 to %c1 step %c1 iter_args(%p = %a, %q = %a) -> (f32, f32) {
    scf.yield %p, %q : f32, f32
  }
  %y = arith.addf %x#0, %x#2147483647 : f32
  return %y : f32
}
