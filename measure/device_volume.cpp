#include "measure/device_volume.h"

#if STRIPELINE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "core/cuda/check.h"
#include "kernels/cuda/volume_kernels.h"

namespace stripeline::measure {

namespace {

// `b` holding at least `bytes` (grown to 1.5 x when short).
void reserve(cuda::DeviceBuffer& b, std::size_t bytes, const char* what) {
  if (b.size() >= bytes) return;
  b = cuda::DeviceBuffer::allocate(std::max<std::size_t>(bytes + bytes / 2, 64), what);
}

template <class T>
void put(cuda::DeviceBuffer& b, const std::vector<T>& v, const char* what, cudaStream_t s) {
  reserve(b, v.size() * sizeof(T), what);
  if (!v.empty()) STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(b.data(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice, s));
}

}  // namespace

DeviceVolume::DeviceVolume(int device) : device_(device) {
  const cuda::ScopedDevice on(device_);
  stream_ = cuda::Stream::create();
  out_ = cuda::DeviceBuffer::allocate(sizeof(kernels::VolumeSums), "measure: volume sums");
}

void DeviceVolume::upload(const Part& part) {
  hx_.clear(), hz_.clear(), hbegin_.assign(1, 0), hy_.clear();
  for (const auto& row : part.rows) {
    hx_.insert(hx_.end(), row.x.begin(), row.x.end());
    hz_.insert(hz_.end(), row.z.begin(), row.z.end());
    hbegin_.push_back(static_cast<std::int64_t>(hx_.size()));
    hy_.push_back(row.y);
  }
  put(x_, hx_, "measure: part X", stream_.get());
  put(z_, hz_, "measure: part Z", stream_.get());
  put(begin_, hbegin_, "measure: part row starts", stream_.get());
  put(y_, hy_, "measure: part row Y", stream_.get());
  last_ = &part, last_id_ = part.id, last_rows_ = part.rows.size();
}

kernels::VolumeSums DeviceVolume::sums(const Part& part, const kernels::VolumeQuery& q) {
  const cuda::ScopedDevice on(device_);
  if (last_ != &part || last_id_ != part.id || last_rows_ != part.rows.size()) upload(part);
  kernels::cuda::DeviceRows rows;
  rows.x = x_.as<float>(), rows.z = z_.as<float>(), rows.row_begin = begin_.as<std::int64_t>(), rows.row_y = y_.as<double>();
  rows.rows = static_cast<int>(part.rows.size());
  kernels::cuda::launch_volume_sums(rows, q, out_.as<kernels::VolumeSums>(), stream_.get());
  kernels::VolumeSums r;
  STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(&r, out_.data(), sizeof r, cudaMemcpyDeviceToHost, stream_.get()));
  STRIPELINE_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));  // the part's worker waits, not acquisition
  return r;
}

}  // namespace stripeline::measure
#endif
