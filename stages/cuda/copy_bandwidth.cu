// Pinned and pageable copy bandwidth, measured the way the pipeline copies:
// cudaMemcpyAsync on a non-default stream, timed with events.
#include <cuda_runtime.h>

#include <algorithm>
#include <barrier>
#include <exception>
#include <thread>
#include <vector>

#include "core/errors.h"
#include "stages/backend.h"
#include "core/cuda/runtime.h"
#include "stages/device_info.h"

namespace stripeline {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// GB/s of `copy`, median of `repeats` after 2 warm-ups.
template <class Copy>
double time_copies(cudaStream_t stream, std::size_t bytes, int repeats, Copy&& copy) {
  const cuda::Event start = cuda::Event::create_timing(), stop = cuda::Event::create_timing();
  std::vector<double> gbps;
  for (int i = 0; i < repeats + 2; ++i) {
    STRIPELINE_CUDA_CHECK(cudaEventRecord(start, stream));
    copy();
    STRIPELINE_CUDA_CHECK(cudaEventRecord(stop, stream));
    STRIPELINE_CUDA_CHECK(cudaEventSynchronize(stop));
    if (i >= 2) gbps.push_back(static_cast<double>(bytes) / (cuda::elapsed_ms(start, stop) * 1e-3) / 1e9);
  }
  return median(gbps);
}

}  // namespace

CopyBandwidth measure_copy_bandwidth(std::size_t bytes, int repeats) {
  if (!cuda_available()) throw RuntimeFailure("copy bandwidth: CUDA is not usable: " + cuda_status());
  CopyBandwidth r;
  r.bytes = bytes;
  const HostBuffer pinned = cuda::allocate_pinned(bytes);
  const HostBuffer pageable = allocate_host(bytes);
  std::fill_n(reinterpret_cast<unsigned char*>(pinned.data()), bytes, 7);
  std::fill_n(reinterpret_cast<unsigned char*>(pageable.data()), bytes, 7);
  const cuda::DeviceBuffer device = cuda::DeviceBuffer::allocate(bytes, "bandwidth test buffer");
  const cuda::Stream stream = cuda::Stream::create();
  r.h2d_gb_per_s = time_copies(stream, bytes, repeats, [&] {
    STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(device.data(), pinned.data(), bytes, cudaMemcpyHostToDevice, stream));
  });
  r.d2h_gb_per_s = time_copies(stream, bytes, repeats, [&] {
    STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(pinned.data(), device.data(), bytes, cudaMemcpyDeviceToHost, stream));
  });
  r.pageable_h2d_gb_per_s = time_copies(stream, bytes, std::max(3, repeats / 4), [&] {
    STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(device.data(), pageable.data(), bytes, cudaMemcpyHostToDevice, stream));
  });
  return r;
}

namespace {

// One device's share of measure_h2d_together: set up, wait for the others,
// copy, report GB/s. Runs on its own thread; errors go back through `error`.
void copy_round(int device, std::size_t bytes, int copies, std::barrier<>& ready, double& gb_per_s, std::exception_ptr& error) {
  bool arrived = false;
  try {
    const cuda::ScopedDevice on_device(device);
    const HostBuffer pinned = cuda::allocate_pinned(bytes);
    std::fill_n(reinterpret_cast<unsigned char*>(pinned.data()), bytes, 7);
    const cuda::DeviceBuffer target = cuda::DeviceBuffer::allocate(bytes, "bandwidth test buffer");
    const cuda::Stream stream = cuda::Stream::create();
    const cuda::Event start = cuda::Event::create_timing(), stop = cuda::Event::create_timing();
    auto round = [&] {
      STRIPELINE_CUDA_CHECK(cudaEventRecord(start, stream));
      for (int i = 0; i < copies; ++i)
        STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(target.data(), pinned.data(), bytes, cudaMemcpyHostToDevice, stream));
      STRIPELINE_CUDA_CHECK(cudaEventRecord(stop, stream));
      STRIPELINE_CUDA_CHECK(cudaEventSynchronize(stop));
    };
    round();  // warm-up, alone or not
    arrived = true;
    ready.arrive_and_wait();
    round();
    gb_per_s = static_cast<double>(bytes) * copies / (cuda::elapsed_ms(start, stop) * 1e-3) / 1e9;
  } catch (...) {
    error = std::current_exception();
    if (!arrived) ready.arrive_and_drop();
  }
}

}  // namespace

std::vector<double> measure_h2d_together(std::size_t bytes, const std::vector<int>& devices, int copies) {
  if (!cuda_available()) throw RuntimeFailure("copy bandwidth: CUDA is not usable: " + cuda_status());
  for (const int d : devices) cuda::check_device(d);
  std::vector<double> gb_per_s(devices.size(), 0.0);
  std::vector<std::exception_ptr> errors(devices.size());
  std::barrier<> ready(static_cast<std::ptrdiff_t>(devices.size()));
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 0; i < devices.size(); ++i)
      threads.emplace_back(copy_round, devices[i], bytes, copies, std::ref(ready), std::ref(gb_per_s[i]), std::ref(errors[i]));
  }
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  return gb_per_s;
}

}  // namespace stripeline
