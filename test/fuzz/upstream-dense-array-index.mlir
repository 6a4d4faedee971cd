// Found by triax-fuzz; upstream's fault, not Triax's: MLIR 22's parser ends
// the process on a dense array of `index`. Parser::parseDenseArrayAttr asks
// the element type for its bit width, and Type::getIntOrFloatBitWidth casts
// `index` to FloatType: a null dereference (SIGSEGV, in every build) instead
// of an error. Expected to fail until a fixed MLIR reports an error; an
// unexpected pass means it does, and this file can become a plain test.
// XFAIL: *
// RUN: not triax-opt %s 2>&1 | FileCheck %s
// CHECK: error:
// CHECK-NOT: {{Stack dump|PLEASE submit}}

func.func private @f() attributes {a = array<index>}
