// The DataStream module: announced buffers, the input pool and the output
// queue (GenTL 1.5, 5.2), and the calls that move buffers between them. The
// thread that fills the buffers is in acquisition.cpp.
#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "acquisition/gentl/frame_info_chunk.h"
#include "acquisition/gentl/producer/sim_producer.h"

namespace stripeline::gentl_sim {

std::size_t Stream::payload_size() const {
  const Settings& s = device->settings;
  const auto n = static_cast<std::size_t>(s.frames_per_buffer);
  return n * s.frame_bytes() + (s.chunk_mode ? n * sizeof(gentl::FrameInfoRecord) : 0);
}

void Stream::to_output(Buffer* b) {
  b->state = Buffer::State::Output;
  output.push_back(b);
  if (new_buffer_event) ++new_buffer_event->fired;
  event_cv.notify_all();
}

void Stream::wake() {
  { std::lock_guard l(mu); }  // a waiter between its check and its wait sees the change
  cv.notify_all();
  event_cv.notify_all();
}

void Stream::stop_worker() {
  {
    std::lock_guard l(mu);
    stop = true;
  }
  cv.notify_all();
  if (worker.joinable()) worker.join();
  std::lock_guard l(mu);
  running = false;
}

Stream::~Stream() {
  if (worker.joinable()) stop_worker();
}

void close_stream(Device* d) {
  if (!d->stream) return;
  Stream* s = d->stream.get();
  s->stop_worker();
  {
    std::lock_guard l(s->mu);
    s->closed = true;
    for (auto* ev : {s->new_buffer_event.get(), s->error_event.get()})
      if (ev) {
        ev->unregistered = true;
        forget(ev);
      }
  }
  s->event_cv.notify_all();
  for (auto& b : s->buffers) forget(b.get());
  forget(s);
  d->stream.reset();  // a waiting EventGetData holds its own reference
}

namespace {

Buffer* buffer_of(Stream* s, BUFFER_HANDLE h) {
  Buffer* b = as<Buffer>(h, Kind::Buffer);
  return b && b->stream == s ? b : nullptr;
}

// Into the input pool, its last fill forgotten (under the stream lock).
void to_input(Stream* s, Buffer* b) {
  b->state = Buffer::State::Queued;
  b->new_data = b->incomplete = b->larger_than_buffer = false;
  b->filled = b->chunk_bytes = b->delivered_height = 0;
  s->input.push_back(b);
}

GC_ERROR announce(Stream* s, std::uint8_t* base, size_t size, void* priv, bool allocated, BUFFER_HANDLE* phBuffer) {
  auto b = std::make_unique<Buffer>();
  b->stream = s;
  b->base = base;
  b->size = size;
  b->user = priv;
  b->allocated = allocated;
  *phBuffer = b.get();
  lib().live.insert(b.get());
  std::lock_guard l(s->mu);
  s->buffers.push_back(std::move(b));
  return ok();
}

GC_ERROR flush(Stream* s, ACQ_QUEUE_TYPE op) {
  switch (op) {
    case ACQ_QUEUE_INPUT_TO_OUTPUT:  // each becomes a new-buffer event (without new data)
      while (!s->input.empty()) {
        Buffer* b = s->input.front();
        s->input.pop_front();
        s->to_output(b);
      }
      return ok();
    case ACQ_QUEUE_OUTPUT_DISCARD:  // and their new-buffer events
      for (Buffer* b : s->output) b->state = Buffer::State::Announced;
      s->output.clear();
      return ok();
    case ACQ_QUEUE_ALL_TO_INPUT:  // the output queue (and its events), then the unqueued ones
      while (!s->output.empty()) {
        to_input(s, s->output.front());
        s->output.pop_front();
      }
      [[fallthrough]];
    case ACQ_QUEUE_UNQUEUED_TO_INPUT:  // neither in the input pool nor awaiting delivery
      for (auto& b : s->buffers)
        if (b->unqueued()) to_input(s, b.get());
      return ok();
    case ACQ_QUEUE_ALL_DISCARD:
      for (Buffer* b : s->input) b->state = Buffer::State::Announced;
      for (Buffer* b : s->output) b->state = Buffer::State::Announced;
      s->input.clear();
      s->output.clear();
      return ok();
    default: return fail(GC_ERR_INVALID_PARAMETER, "flush operation " + std::to_string(op));
  }
}

GC_ERROR stream_info(Stream* s, STREAM_INFO_CMD cmd, INFO_DATATYPE* t, void* b, size_t* n) {
  switch (cmd) {
    case STREAM_INFO_ID: return put_string(s->id, t, b, n);
    case STREAM_INFO_NUM_DELIVERED: return put_u64(s->delivered, t, b, n);
    case STREAM_INFO_NUM_UNDERRUN: return put_u64(s->underruns, t, b, n);
    case STREAM_INFO_NUM_ANNOUNCED: return put_size(s->buffers.size(), t, b, n);
    case STREAM_INFO_NUM_QUEUED: return put_size(s->input.size(), t, b, n);
    case STREAM_INFO_NUM_AWAIT_DELIVERY: return put_size(s->output.size(), t, b, n);
    case STREAM_INFO_NUM_STARTED: return put_u64(s->started, t, b, n);
    case STREAM_INFO_PAYLOAD_SIZE: return put_size(s->payload_size(), t, b, n);
    case STREAM_INFO_IS_GRABBING: return put_bool(s->running, t, b, n);
    case STREAM_INFO_DEFINES_PAYLOADSIZE: return put_bool(true, t, b, n);
    case STREAM_INFO_TLTYPE: return put_string(kTlType, t, b, n);
    case STREAM_INFO_NUM_CHUNKS_MAX: return put_size(1, t, b, n);
    case STREAM_INFO_BUF_ANNOUNCE_MIN: return put_size(1, t, b, n);
    case STREAM_INFO_BUF_ALIGNMENT: return put_size(1, t, b, n);
    default: return fail(GC_ERR_NOT_IMPLEMENTED, "stream info " + std::to_string(cmd));
  }
}

GC_ERROR buffer_info(const Buffer* b, BUFFER_INFO_CMD cmd, INFO_DATATYPE* t, void* p, size_t* n) {
  const bool has_data = b->state == Buffer::State::Output || b->state == Buffer::State::Delivered;
  switch (cmd) {
    case BUFFER_INFO_BASE: return put_ptr(b->base, t, p, n);
    case BUFFER_INFO_SIZE: return put_size(b->size, t, p, n);
    case BUFFER_INFO_USER_PTR: return put_ptr(b->user, t, p, n);
    case BUFFER_INFO_TIMESTAMP:
    case BUFFER_INFO_TIMESTAMP_NS: return put_u64(static_cast<std::uint64_t>(b->timestamp_ns), t, p, n);
    case BUFFER_INFO_NEW_DATA: return put_bool(b->new_data, t, p, n);
    case BUFFER_INFO_IS_QUEUED: return put_bool(!b->unqueued(), t, p, n);  // input pool, being filled, or output queue
    case BUFFER_INFO_IS_ACQUIRING: return put_bool(b->state == Buffer::State::Filling, t, p, n);
    case BUFFER_INFO_IS_INCOMPLETE: return put_bool(has_data && b->incomplete, t, p, n);
    case BUFFER_INFO_TLTYPE: return put_string(kTlType, t, p, n);
    case BUFFER_INFO_SIZE_FILLED:
    case BUFFER_INFO_DATA_SIZE: return put_size(has_data ? b->filled : 0, t, p, n);
    case BUFFER_INFO_WIDTH: return put_size(b->width, t, p, n);
    case BUFFER_INFO_HEIGHT: return put_size(b->height, t, p, n);
    case BUFFER_INFO_XOFFSET:
    case BUFFER_INFO_YOFFSET:
    case BUFFER_INFO_XPADDING:
    case BUFFER_INFO_YPADDING:
    case BUFFER_INFO_IMAGEOFFSET: return put_size(0, t, p, n);
    case BUFFER_INFO_FRAMEID: return put_u64(b->frame_id, t, p, n);
    case BUFFER_INFO_IMAGEPRESENT: return put_bool(has_data && b->delivered_height > 0, t, p, n);
    case BUFFER_INFO_PAYLOADTYPE: return put_size(PAYLOAD_TYPE_IMAGE, t, p, n);
    case BUFFER_INFO_PIXELFORMAT: return put_u64(static_cast<std::uint64_t>(b->pixel_format), t, p, n);
    case BUFFER_INFO_PIXELFORMAT_NAMESPACE: return put_u64(PIXELFORMAT_NAMESPACE_PFNC_32BIT, t, p, n);
    case BUFFER_INFO_DELIVERED_IMAGEHEIGHT: return put_size(has_data ? b->delivered_height : 0, t, p, n);
    case BUFFER_INFO_DELIVERED_CHUNKPAYLOADSIZE: return put_size(has_data ? b->chunk_bytes : 0, t, p, n);
    case BUFFER_INFO_PIXEL_ENDIANNESS: return put_i32(PIXELENDIANNESS_LITTLE, t, p, n);
    case BUFFER_INFO_DATA_LARGER_THAN_BUFFER: return put_bool(has_data && b->larger_than_buffer, t, p, n);
    case BUFFER_INFO_CONTAINS_CHUNKDATA: return put_bool(has_data && b->chunk_bytes > 0, t, p, n);
    default: return fail(GC_ERR_NOT_IMPLEMENTED, "buffer info " + std::to_string(cmd));
  }
}

GC_ERROR open_stream(Device* d, DS_HANDLE* phDataStream) {
  d->stream = std::make_shared<Stream>();
  Stream* s = d->stream.get();
  s->device = d;
  s->id = "Stream0";
  auto count = [s](auto field) {
    return [s, field] {
      std::lock_guard l(s->mu);
      return static_cast<std::int64_t>(field(*s));
    };
  };
  build_plain_map(s, "StripelineSimStream",
                  {text_feature("StreamID", "StreamInformation", [] { return std::string("Stream0"); }),
                   int_feature("StreamAnnouncedBufferCount", "BufferHandlingControl", 0, 0, count([](Stream& x) { return x.buffers.size(); }), nullptr),
                   int_feature("StreamDeliveredFrameCount", "StreamInformation", 0, 0, count([](Stream& x) { return x.delivered; }), nullptr)});
  lib().live.insert(s);
  *phDataStream = s;
  return ok();
}

}  // namespace
}  // namespace stripeline::gentl_sim

using namespace stripeline::gentl_sim;

#define BUFFER(h)                 \
  Buffer* b = buffer_of(s, h);    \
  if (!b) return fail(GC_ERR_INVALID_HANDLE, "not a buffer of this stream")

extern "C" {

GC_ERROR DevOpenDataStream(DEV_HANDLE hDevice, const char* sDataStreamID, DS_HANDLE* phDataStream) {
  SIM_HANDLE(Device, d, hDevice);
  if (!phDataStream) return fail(GC_ERR_INVALID_PARAMETER, "null handle");
  if (!sDataStreamID || std::string(sDataStreamID) != "Stream0")
    return fail(GC_ERR_INVALID_ID, "no data stream '" + std::string(sDataStreamID ? sDataStreamID : "") + "'");
  if (d->stream) return fail(GC_ERR_RESOURCE_IN_USE, "the data stream is already open");
  return open_stream(d, phDataStream);
}

GC_ERROR DSAnnounceBuffer(DS_HANDLE hDataStream, void* pBuffer, size_t iSize, void* pPrivate, BUFFER_HANDLE* phBuffer) {
  SIM_HANDLE(Stream, s, hDataStream);
  if (!pBuffer || !phBuffer || iSize == 0) return fail(GC_ERR_INVALID_PARAMETER, "null buffer or handle, or size 0");
  if (s->device->settings.alloc_only)
    return fail(GC_ERR_NOT_IMPLEMENTED, "SimAllocOnly = 1: this grabber fills only its own memory (DSAllocAndAnnounceBuffer)");
  {
    std::lock_guard l(s->mu);
    for (auto& b : s->buffers)
      if (b->base == pBuffer) return fail(GC_ERR_RESOURCE_IN_USE, "this memory is already announced");
  }
  return announce(s, static_cast<std::uint8_t*>(pBuffer), iSize, pPrivate, false, phBuffer);
}

GC_ERROR DSAllocAndAnnounceBuffer(DS_HANDLE hDataStream, size_t iSize, void* pPrivate, BUFFER_HANDLE* phBuffer) {
  SIM_HANDLE(Stream, s, hDataStream);
  if (!phBuffer || iSize == 0) return fail(GC_ERR_INVALID_PARAMETER, "null handle or size 0");
  if (iSize > SIZE_MAX - 4095) return fail(GC_ERR_OUT_OF_MEMORY, "cannot allocate " + std::to_string(iSize) + " bytes");
  void* p = std::aligned_alloc(4096, (iSize + 4095) / 4096 * 4096);
  if (!p) return fail(GC_ERR_OUT_OF_MEMORY, "cannot allocate " + std::to_string(iSize) + " bytes");
  return announce(s, static_cast<std::uint8_t*>(p), iSize, pPrivate, true, phBuffer);
}

GC_ERROR DSFlushQueue(DS_HANDLE hDataStream, ACQ_QUEUE_TYPE iOperation) {
  SIM_HANDLE(Stream, s, hDataStream);
  std::lock_guard l(s->mu);
  const GC_ERROR rc = flush(s, iOperation);
  s->cv.notify_all();
  return rc;
}

GC_ERROR DSStartAcquisition(DS_HANDLE hDataStream, ACQ_START_FLAGS, uint64_t iNumToAcquire) {
  SIM_HANDLE(Stream, s, hDataStream);
  std::lock_guard l(s->mu);
  if (s->running) return fail(GC_ERR_RESOURCE_IN_USE, "the stream is already acquiring");
  if (s->link_lost) return fail(GC_ERR_IO, "the device is gone: open it again");
  if (s->buffers.empty()) return fail(GC_ERR_RESOURCE_EXHAUSTED, "no buffer announced");
  s->snapshot = s->device->settings;
  s->to_acquire = iNumToAcquire == 0 ? GENTL_INFINITE : iNumToAcquire;
  s->delivered = 0;
  s->stop = false;
  s->running = true;
  try {
    s->worker = std::thread([s] { s->run(); });
  } catch (const std::exception& e) {
    s->running = false;
    return fail(GC_ERR_ERROR, std::string("cannot start the acquisition thread: ") + e.what());
  }
  return ok();
}

GC_ERROR DSStopAcquisition(DS_HANDLE hDataStream, ACQ_STOP_FLAGS) {
  SIM_HANDLE(Stream, s, hDataStream);
  {
    std::lock_guard l(s->mu);
    if (!s->running) return fail(GC_ERR_RESOURCE_IN_USE, "the stream is not acquiring");
  }
  s->stop_worker();
  return ok();
}

GC_ERROR DSGetInfo(DS_HANDLE hDataStream, STREAM_INFO_CMD iInfoCmd, INFO_DATATYPE* piType, void* pBuffer, size_t* piSize) {
  SIM_HANDLE(Stream, s, hDataStream);
  std::lock_guard l(s->mu);
  return stream_info(s, iInfoCmd, piType, pBuffer, piSize);
}

GC_ERROR DSGetBufferID(DS_HANDLE hDataStream, uint32_t iIndex, BUFFER_HANDLE* phBuffer) {
  SIM_HANDLE(Stream, s, hDataStream);
  std::lock_guard l(s->mu);
  if (!phBuffer) return fail(GC_ERR_INVALID_PARAMETER, "null handle");
  if (iIndex >= s->buffers.size()) return fail(GC_ERR_INVALID_INDEX, "buffer index " + std::to_string(iIndex));
  *phBuffer = s->buffers[iIndex].get();
  return ok();
}

GC_ERROR DSGetParentDev(DS_HANDLE hDataStream, DEV_HANDLE* phDevice) {
  SIM_HANDLE(Stream, s, hDataStream);
  return put_out(phDevice, s->device, "handle");
}

GC_ERROR DSClose(DS_HANDLE hDataStream) {
  SIM_HANDLE(Stream, s, hDataStream);
  close_stream(s->device);
  return ok();
}

GC_ERROR DSRevokeBuffer(DS_HANDLE hDataStream, BUFFER_HANDLE hBuffer, void** pBuffer, void** pPrivate) {
  SIM_HANDLE(Stream, s, hDataStream);
  BUFFER(hBuffer);
  std::lock_guard l(s->mu);
  if (!b->unqueued()) return fail(GC_ERR_BUSY, "the buffer is queued or awaiting delivery: flush the queues first");
  if (pBuffer) *pBuffer = b->allocated ? nullptr : b->base;
  if (pPrivate) *pPrivate = b->user;
  forget(b);
  s->buffers.erase(std::find_if(s->buffers.begin(), s->buffers.end(), [b](const auto& p) { return p.get() == b; }));
  return ok();
}

// A buffer smaller than the payload is accepted: the grabber fills the frames
// that fit and delivers it incomplete (BUFFER_INFO_DATA_LARGER_THAN_BUFFER).
GC_ERROR DSQueueBuffer(DS_HANDLE hDataStream, BUFFER_HANDLE hBuffer) {
  SIM_HANDLE(Stream, s, hDataStream);
  BUFFER(hBuffer);
  {
    std::lock_guard l(s->mu);
    if (!b->unqueued()) return fail(GC_ERR_RESOURCE_IN_USE, "the buffer is already queued or awaiting delivery");
    to_input(s, b);
  }
  s->cv.notify_all();
  return ok();
}

GC_ERROR DSGetBufferInfo(DS_HANDLE hDataStream, BUFFER_HANDLE hBuffer, BUFFER_INFO_CMD iInfoCmd, INFO_DATATYPE* piType, void* pBuffer,
                         size_t* piSize) {
  SIM_HANDLE(Stream, s, hDataStream);
  BUFFER(hBuffer);
  std::lock_guard l(s->mu);
  return buffer_info(b, iInfoCmd, piType, pBuffer, piSize);
}

GC_ERROR DSGetBufferChunkData(DS_HANDLE hDataStream, BUFFER_HANDLE hBuffer, SINGLE_CHUNK_DATA* pChunkData, size_t* piNumChunks) {
  SIM_HANDLE(Stream, s, hDataStream);
  BUFFER(hBuffer);
  if (!piNumChunks) return fail(GC_ERR_INVALID_PARAMETER, "null count");
  std::lock_guard l(s->mu);
  const bool has_data = b->state == Buffer::State::Output || b->state == Buffer::State::Delivered;
  if (!has_data || b->chunk_bytes == 0) return fail(GC_ERR_NO_DATA, "this buffer carries no chunk data");
  if (!pChunkData) {
    *piNumChunks = 1;
    return ok();
  }
  if (*piNumChunks < 1) {
    *piNumChunks = 1;
    return fail(GC_ERR_BUFFER_TOO_SMALL, "room for 1 chunk needed");
  }
  pChunkData[0] = SINGLE_CHUNK_DATA{stripeline::gentl::kFrameInfoChunkId, static_cast<ptrdiff_t>(b->filled - b->chunk_bytes), b->chunk_bytes};
  *piNumChunks = 1;
  return ok();
}

GC_ERROR DSGetNumBufferParts(DS_HANDLE hDataStream, BUFFER_HANDLE hBuffer, uint32_t* piNumParts) {
  SIM_HANDLE(Stream, s, hDataStream);
  BUFFER(hBuffer);
  (void)b;
  if (!piNumParts) return fail(GC_ERR_INVALID_PARAMETER, "null count");
  *piNumParts = 0;  // single-part image buffers
  return ok();
}

GC_ERROR DSGetBufferPartInfo(DS_HANDLE hDataStream, BUFFER_HANDLE hBuffer, uint32_t iPartIndex, BUFFER_PART_INFO_CMD, INFO_DATATYPE*, void*,
                             size_t*) {
  SIM_HANDLE(Stream, s, hDataStream);
  BUFFER(hBuffer);
  (void)b;
  return fail(GC_ERR_INVALID_INDEX, "part " + std::to_string(iPartIndex) + ": buffers are single-part images (0 parts)");
}

}  // extern "C"
