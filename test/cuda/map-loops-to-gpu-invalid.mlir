// RUN: triax-opt %s -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(triax-map-loops-to-gpu{block-size=100}))'

// expected-error @below {{triax-map-loops-to-gpu: block-size 100 is not a multiple of 32 in [32, 1024]}}
func.func @f() {
  return
}
