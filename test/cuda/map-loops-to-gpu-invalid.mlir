// RUN: triax-opt %s -split-input-file -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(triax-map-loops-to-gpu{block-size=100}))'
// RUN: not triax-opt %s --pass-pipeline='builtin.module(func.func(triax-map-loops-to-gpu{rows=lane}))' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ROWS

// ROWS: triax-map-loops-to-gpu: rows 'lane' is not thread, block or warp

// expected-error @below {{triax-map-loops-to-gpu: block-size 100 is not a multiple of 32 in [32, 1024]}}
func.func @f() {
  return
}
