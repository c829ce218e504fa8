#pragma once
// RAII for the GLib/Aravis handles stripeline holds, and GError to exception.
// Only the Aravis translation units include this.
#include <arv.h>

#include <string>
#include <utility>

#include "core/errors.h"

namespace stripeline::aravis {

// Owns one reference of a GObject.
template <class T>
class GObjectRef {
 public:
  GObjectRef() = default;
  explicit GObjectRef(T* p) : p_(p) {}
  GObjectRef(const GObjectRef&) = delete;
  GObjectRef& operator=(const GObjectRef&) = delete;
  GObjectRef(GObjectRef&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  GObjectRef& operator=(GObjectRef&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
    }
    return *this;
  }
  ~GObjectRef() { reset(); }
  void reset(T* p = nullptr) {
    if (p_) g_object_unref(p_);
    p_ = p;
  }
  T* get() const { return p_; }
  T* release() { return std::exchange(p_, nullptr); }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  T* p_ = nullptr;
};

// A buffer popped from a stream: ours until it goes back to the driver,
// which the lease does when it ends (or at reset()). It goes back with its
// frame id and timestamps cleared: Aravis writes them only when a frame's
// leader packet arrives, so a frame whose leader was lost would otherwise
// carry the id of this buffer's previous frame. The stream must outlive it.
class BufferLease {
 public:
  BufferLease() = default;
  BufferLease(ArvStream* stream, ArvBuffer* buffer) : stream_(stream), buffer_(buffer) {}
  BufferLease(const BufferLease&) = delete;
  BufferLease& operator=(const BufferLease&) = delete;
  BufferLease(BufferLease&& o) noexcept : stream_(o.stream_), buffer_(std::exchange(o.buffer_, nullptr)) {}
  BufferLease& operator=(BufferLease&& o) noexcept {
    if (this != &o) {
      reset();
      stream_ = o.stream_;
      buffer_ = std::exchange(o.buffer_, nullptr);
    }
    return *this;
  }
  ~BufferLease() { reset(); }
  void reset() {
    if (!buffer_) return;
    arv_buffer_set_frame_id(buffer_, 0);
    arv_buffer_set_timestamp(buffer_, 0);
    arv_buffer_set_system_timestamp(buffer_, 0);
    arv_stream_push_buffer(stream_, std::exchange(buffer_, nullptr));
  }
  ArvBuffer* get() const { return buffer_; }
  explicit operator bool() const { return buffer_ != nullptr; }

 private:
  ArvStream* stream_ = nullptr;
  ArvBuffer* buffer_ = nullptr;
};

// A GError out-parameter that frees itself.
class GErrorSlot {
 public:
  GErrorSlot() = default;
  GErrorSlot(const GErrorSlot&) = delete;
  GErrorSlot& operator=(const GErrorSlot&) = delete;
  ~GErrorSlot() { clear(); }
  GError** out() {
    clear();
    return &e_;
  }
  explicit operator bool() const { return e_ != nullptr; }
  std::string message() const { return e_ && e_->message ? e_->message : "unknown error"; }
  void clear() {
    if (e_) g_error_free(e_);
    e_ = nullptr;
  }

 private:
  GError* e_ = nullptr;
};

// A NULL-terminated array of strings Aravis gives us to free with g_free.
class DupStrings {
 public:
  explicit DupStrings(const char** v, unsigned n) : v_(v), n_(n) {}
  DupStrings(const DupStrings&) = delete;
  DupStrings& operator=(const DupStrings&) = delete;
  ~DupStrings() { g_free(v_); }
  unsigned size() const { return v_ ? n_ : 0; }
  const char* operator[](unsigned i) const { return v_[i]; }

 private:
  const char** v_;
  unsigned n_;
};

}  // namespace stripeline::aravis
