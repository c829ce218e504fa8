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
