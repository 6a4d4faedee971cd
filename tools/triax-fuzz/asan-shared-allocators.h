//===- asan-shared-allocators.h - No ASan poisoning in LLVM's allocators --===//
//
// Included first in every file of the fuzz build (TRIAX_FUZZ=ON). Compiled
// with ASan, LLVM's BumpPtrAllocator and Recyclers poison the memory they
// have not handed out yet, and unpoison what they hand out. libMLIR.so is
// not instrumented: its copies of those inline functions unpoison nothing.
// An allocator both use, the context's attribute and type uniquer, then
// hands libMLIR memory that Triax's instrumented copy poisoned, and ASan
// reports libMLIR's first write to it (use-after-poison in StringAttr::get).
// Without the poisoning, ASan still checks every heap block, stack and
// global; it no longer checks accesses between objects of one slab.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_FUZZ_ASAN_SHARED_ALLOCATORS_H
#define TRIAX_FUZZ_ASAN_SHARED_ALLOCATORS_H

// The declarations first: the include guard of the header keeps them from
// being read again once the macros below rename them.
#include <sanitizer/asan_interface.h>

#define __asan_poison_memory_region(addr, size) ((void)(addr), (void)(size))
#define __asan_unpoison_memory_region(addr, size) ((void)(addr), (void)(size))

#endif // TRIAX_FUZZ_ASAN_SHARED_ALLOCATORS_H
