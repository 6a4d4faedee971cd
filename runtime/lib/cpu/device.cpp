//===- device.cpp - The device table and its choice ---------------------===//
//
// The CPU device's table and activeDevice() (device.h).
//
//===----------------------------------------------------------------------===//

#include "device.h"

#include <atomic>

namespace {

void noSync() {} // the kernels ran when they returned

const triax::rt::Device cpuDevice = {
    "cpu",
    triax::rt::host::alloc,
    triax::rt::host::release,
    triax::rt::host::category,
    triax::rt::host::copyToHost,
    triax::rt::host::copyToDevice,
    triax::rt::host::copyOnDevice,
    triax::rt::host::fill,
    noSync,
    triax::rt::host::gemm,
    triax::rt::host::attention,
};

// Zero-initialized (static storage) before any constructor runs.
std::atomic<const triax::rt::Device *> registered;

} // namespace

const triax::rt::Device &triax::rt::hostDevice() { return cpuDevice; }

void triax::rt::registerDevice(const Device *device) {
  registered.store(device, std::memory_order_release);
}

const triax::rt::Device &triax::rt::activeDevice() {
  const Device *device = registered.load(std::memory_order_acquire);
  return device ? *device : cpuDevice;
}
