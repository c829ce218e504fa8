// What every module of the simulated producer shares: errors, the library
// state and its handles, info answers.
#include <cstring>

#include "acquisition/gentl/producer/sim_producer.h"

namespace stripeline::gentl_sim {

std::int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count(); }

LastError& last_error() {
  thread_local LastError e;
  return e;
}

GC_ERROR fail(GC_ERROR code, std::string text) {
  last_error() = {code, std::move(text)};
  return code;
}

Library& lib() {
  static Library l;
  return l;
}

Library::~Library() {
  // A process that exits while acquiring, without GCCloseLib: stop and join
  // the acquisition threads before their objects go (a joinable std::thread
  // destroyed would abort the process).
  std::lock_guard l(mu);
  close_system();
  initialized = false;
}

Module* as_port(void* h) {
  auto* o = static_cast<Object*>(h);
  if (!h || !lib().live.count(o) || o->kind == Kind::Event || o->kind == Kind::Buffer) return nullptr;
  return static_cast<Module*>(o);
}

void forget(const Object* o) { lib().live.erase(o); }

Buffer::~Buffer() {
  if (allocated) std::free(base);
}

GC_ERROR put_bytes(INFO_DATATYPE type, const void* data, std::size_t n, INFO_DATATYPE* piType, void* pBuffer, std::size_t* piSize) {
  if (!piSize) return fail(GC_ERR_INVALID_PARAMETER, "piSize is null");
  if (piType) *piType = type;
  if (!pBuffer) {
    *piSize = n;
    return ok();
  }
  if (*piSize < n) {
    const std::size_t had = *piSize;
    *piSize = n;
    return fail(GC_ERR_BUFFER_TOO_SMALL, "the buffer holds " + std::to_string(had) + " bytes, " + std::to_string(n) + " needed");
  }
  std::memcpy(pBuffer, data, n);
  *piSize = n;
  return ok();
}

GC_ERROR put_string(const std::string& s, INFO_DATATYPE* t, void* b, std::size_t* n) { return put_bytes(INFO_DATATYPE_STRING, s.c_str(), s.size() + 1, t, b, n); }
GC_ERROR put_bool(bool v, INFO_DATATYPE* t, void* b, std::size_t* n) {
  const bool8_t x = v ? 1 : 0;
  return put_bytes(INFO_DATATYPE_BOOL8, &x, sizeof x, t, b, n);
}
GC_ERROR put_size(std::size_t v, INFO_DATATYPE* t, void* b, std::size_t* n) { return put_bytes(INFO_DATATYPE_SIZET, &v, sizeof v, t, b, n); }
GC_ERROR put_u64(std::uint64_t v, INFO_DATATYPE* t, void* b, std::size_t* n) { return put_bytes(INFO_DATATYPE_UINT64, &v, sizeof v, t, b, n); }
GC_ERROR put_u32(std::uint32_t v, INFO_DATATYPE* t, void* b, std::size_t* n) { return put_bytes(INFO_DATATYPE_UINT32, &v, sizeof v, t, b, n); }
GC_ERROR put_i32(std::int32_t v, INFO_DATATYPE* t, void* b, std::size_t* n) { return put_bytes(INFO_DATATYPE_INT32, &v, sizeof v, t, b, n); }
GC_ERROR put_ptr(const void* v, INFO_DATATYPE* t, void* b, std::size_t* n) { return put_bytes(INFO_DATATYPE_PTR, &v, sizeof v, t, b, n); }

}  // namespace stripeline::gentl_sim
