// Issue 18 reports that MLIR 22's scf.index_switch parser frees a region
// twice after a type error, so that a malformed file aborts triax-opt,
// triaxc and triax-report with heap corruption. With Debian's MLIR 22.1.8
// (the one Triax builds against) none of these malformed switches, nor the
// 67k mutants of them triax-fuzz ran under ASan, frees anything twice: each
// is a clean error, so this is a plain test, not an XFAIL.
// The file runs triax-opt under ASan's allocator (preloaded, where g++'s
// libasan is installed: %asan_preload), which reports a double free or a
// use after free deterministically where glibc may not notice; an MLIR that
// has the fault fails this test instead of corrupting the heap quietly.
// RUN: not %asan_preload triax-opt -split-input-file %s 2>&1 | FileCheck %s \
// RUN:   --implicit-check-not=AddressSanitizer --implicit-check-not="Stack dump"

// A case region yields the wrong type: the verifier's error.
// CHECK: [[@LINE+2]]:8: error: 'scf.index_switch' op expected result #0 of each region to be 'i32'
func.func @case_yield_type(%arg0: index) -> i32 {
  %0 = scf.index_switch %arg0 -> i32
  case 0 {
    %c = arith.constant 1 : i64
    scf.yield %c : i64
  }
  default {
    %c = arith.constant 2 : i32
    scf.yield %c : i32
  }
  return %0 : i32
}

// -----
// The operand is not an index: a type error after both regions are parsed.
// CHECK: [[@LINE+2]]:25: error: use of value '%arg0' expects different type than prior uses: 'index' vs 'i32'
func.func @operand_type(%arg0: i32) -> i32 {
  %0 = scf.index_switch %arg0 -> i32
  case 0 {
    %c = arith.constant 1 : i32
    scf.yield %c : i32
  }
  default {
    %c = arith.constant 2 : i32
    scf.yield %c : i32
  }
  return %0 : i32
}

// -----
// A type error in the second case region, the first already parsed.
// CHECK: [[@LINE+9]]:15: error: use of value '%c' expects different type than prior uses: 'i32' vs 'i64'
func.func @second_case_type(%arg0: index) -> i32 {
  %0 = scf.index_switch %arg0 -> i32
  case 0 {
    %c = arith.constant 1 : i32
    scf.yield %c : i32
  }
  case 1 {
    %c = arith.constant 1 : i64
    scf.yield %c : i32
  }
  default {
    %c = arith.constant 2 : i32
    scf.yield %c : i32
  }
  return %0 : i32
}

// -----
// A type error in the default region, the case regions already parsed.
// CHECK: [[@LINE+9]]:15: error: use of value '%c' expects different type than prior uses: 'i64' vs 'i32'
func.func @default_type(%arg0: index) -> i32 {
  %0 = scf.index_switch %arg0 -> i32
  case 0 {
    %c = arith.constant 1 : i32
    scf.yield %c : i32
  }
  default {
    %c = arith.constant 2 : i32
    scf.yield %c : i64
  }
  return %0 : i32
}

// -----
// A case region uses the switch's own result with another type.
// CHECK: [[@LINE+2]]:3: error: definition of SSA value '%0#0' has type 'i32'
func.func @own_result_type(%arg0: index) -> i32 {
  %0 = scf.index_switch %arg0 -> i32
  case 0 {
    scf.yield %0 : i64
  }
  default {
    %c = arith.constant 2 : i32
    scf.yield %c : i32
  }
  return %0 : i32
}

// -----
// Two results bound to a switch of one.
// CHECK: [[@LINE+2]]:3: error: operation defines 1 results but was provided 2 to bind
func.func @result_count(%arg0: index) -> i32 {
  %0:2 = scf.index_switch %arg0 -> i32
  case 0 {
    %c = arith.constant 1 : i32
    scf.yield %c : i32
  }
  default {
    %c = arith.constant 2 : i32
    scf.yield %c : i32
  }
  return %0#0 : i32
}

// -----
// The result used with another type after the switch.
// CHECK: [[@LINE+11]]:10: error: use of value '%0' expects different type than prior uses: 'i64' vs 'i32'
func.func @result_use_type(%arg0: index) -> i32 {
  %0 = scf.index_switch %arg0 -> i32
  case 0 {
    %c = arith.constant 1 : i32
    scf.yield %c : i32
  }
  default {
    %c = arith.constant 2 : i32
    scf.yield %c : i32
  }
  return %0 : i64
}
