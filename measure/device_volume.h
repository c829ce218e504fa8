#pragma once
// The volume tool's sums on the GPU, for the measuring sink when the scan
// runs on the CUDA backend (docs/measure.md, "Where the tools run"): a
// part's rows are packed and uploaded once, then each volume tool of the job
// is one kernel (kernels/cuda/volume_kernels.h) giving the CPU oracle's sums
// (measure::volume_sums) bit for bit. Built with CUDA only.
#if STRIPELINE_HAVE_CUDA
#include <cstdint>
#include <vector>

#include "core/cuda/runtime.h"
#include "kernels/volume_ops.h"
#include "measure/part.h"

namespace stripeline::measure {

class DeviceVolume {
 public:
  // On `device` (an ordinal); a stream and the sums' buffer. CudaError on failure.
  explicit DeviceVolume(int device);

  // The sums of q over the part's rows. The rows go up when the part is not
  // the one uploaded last (its address, id and row count); the device
  // buffers grow to the largest part seen (allocation only then). One thread
  // at a time.
  kernels::VolumeSums sums(const Part& part, const kernels::VolumeQuery& q);

 private:
  void upload(const Part& part);

  int device_;
  cuda::Stream stream_;
  cuda::DeviceBuffer x_, z_, begin_, y_, out_;
  std::vector<float> hx_, hz_;
  std::vector<std::int64_t> hbegin_;
  std::vector<double> hy_;
  const Part* last_ = nullptr;
  std::uint64_t last_id_ = 0;
  std::size_t last_rows_ = 0;
};

}  // namespace stripeline::measure
#endif
