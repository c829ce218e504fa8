// Events of a data stream (GenTL 1.5, 5.2.5 and 6.4): EVENT_NEW_BUFFER, whose
// data queue is the stream's output queue, and EVENT_ERROR. Every event
// field is guarded by its stream's lock; EventGetData waits on that lock
// only, holding the stream alive (a close meanwhile makes the wait abort).
#include <cstring>

#include "acquisition/gentl/producer/sim_producer.h"

namespace stripeline::gentl_sim {
namespace {

// The stream and event behind a handle (under the library lock).
bool find_event(EVENT_HANDLE h, std::shared_ptr<Stream>* s, std::shared_ptr<Event>* ev) {
  Event* e = as<Event>(h, Kind::Event);
  if (!e || !e->stream || !e->stream->device) return false;
  *s = e->stream->device->stream;
  if (s->get() != e->stream) return false;
  *ev = (*s)->new_buffer_event.get() == e ? (*s)->new_buffer_event : (*s)->error_event.get() == e ? (*s)->error_event : nullptr;
  return *ev != nullptr;
}

std::shared_ptr<Event>* slot_of(Stream* s, EVENT_TYPE type) {
  return type == EVENT_NEW_BUFFER ? &s->new_buffer_event : type == EVENT_ERROR ? &s->error_event : nullptr;
}

bool has_data(const Stream& s, const Event& ev) { return ev.type == EVENT_NEW_BUFFER ? !s.output.empty() : !ev.queue.empty(); }

std::size_t data_size(const Event& ev) {
  return ev.type == EVENT_NEW_BUFFER ? sizeof(EVENT_NEW_BUFFER_DATA) : ev.queue.front().size();
}

// Hands the head of the queue out (under the stream lock); a null buffer
// asks for its size, a buffer too small leaves it queued.
GC_ERROR take(Stream& s, Event& ev, void* pBuffer, size_t* piSize) {
  const std::size_t need = data_size(ev);
  if (!pBuffer || *piSize < need) {
    const bool query = !pBuffer;
    *piSize = need;
    return query ? ok() : fail(GC_ERR_BUFFER_TOO_SMALL, "event data needs " + std::to_string(need) + " bytes");
  }
  if (ev.type == EVENT_NEW_BUFFER) {
    Buffer* b = s.output.front();
    s.output.pop_front();
    b->state = Buffer::State::Delivered;
    const EVENT_NEW_BUFFER_DATA data{b, b->user};
    std::memcpy(pBuffer, &data, sizeof data);
  } else {
    std::memcpy(pBuffer, ev.queue.front().data(), need);
    ev.queue.pop_front();
  }
  *piSize = need;
  return ok();
}

// Waits (under the stream lock) until the event has data or the wait ends.
bool wait_for(std::unique_lock<std::mutex>& l, Stream& s, Event& ev, uint64_t timeout_ms) {
  auto ready = [&] { return ev.kills > 0 || ev.unregistered || s.closed || s.link_lost || has_data(s, ev); };
  // Beyond ~30 years a timeout is infinite (and a chrono sum cannot overflow).
  if (timeout_ms == GENTL_INFINITE || timeout_ms > (std::uint64_t{1} << 40)) {
    s.event_cv.wait(l, ready);
    return true;
  }
  return s.event_cv.wait_for(l, std::chrono::milliseconds(static_cast<std::int64_t>(timeout_ms)), ready);
}

}  // namespace

void fire_error(Stream* s, GC_ERROR code, const std::string& text) {
  Event* ev = s->error_event.get();
  if (!ev) return;
  std::vector<std::uint8_t> bytes(sizeof(GC_ERROR) + text.size() + 1);
  std::memcpy(bytes.data(), &code, sizeof code);
  std::memcpy(bytes.data() + sizeof code, text.c_str(), text.size() + 1);
  ev->queue.push_back(std::move(bytes));
  ++ev->fired;
  s->event_cv.notify_all();
}

}  // namespace stripeline::gentl_sim

using namespace stripeline::gentl_sim;

extern "C" {

GC_ERROR GCRegisterEvent(EVENTSRC_HANDLE hEventSrc, EVENT_TYPE iEventID, EVENT_HANDLE* phEvent) {
  SIM_LOCKED;
  if (!handle_of<Module>(hEventSrc)) return fail(GC_ERR_INVALID_HANDLE, "not a module");
  if (!phEvent) return fail(GC_ERR_INVALID_PARAMETER, "null event handle");
  Stream* s = as<Stream>(hEventSrc, Kind::Stream);
  std::shared_ptr<Event>* slot = s ? slot_of(s, iEventID) : nullptr;
  if (!slot) return fail(GC_ERR_NOT_IMPLEMENTED, "event type " + std::to_string(iEventID) + " is not raised by this module");
  std::lock_guard l(s->mu);
  if (*slot) return fail(GC_ERR_RESOURCE_IN_USE, "this event is already registered");
  *slot = std::make_shared<Event>(iEventID, s);
  if (iEventID == EVENT_NEW_BUFFER) (*slot)->fired = s->output.size();  // buffers already waiting are its data
  lib().live.insert(slot->get());
  *phEvent = slot->get();
  return ok();
}

GC_ERROR GCUnregisterEvent(EVENTSRC_HANDLE hEventSrc, EVENT_TYPE iEventID) {
  SIM_LOCKED;
  if (!handle_of<Module>(hEventSrc)) return fail(GC_ERR_INVALID_HANDLE, "not a module");
  Stream* s = as<Stream>(hEventSrc, Kind::Stream);
  std::shared_ptr<Event>* slot = s ? slot_of(s, iEventID) : nullptr;
  if (!slot) return fail(GC_ERR_NOT_IMPLEMENTED, "event type " + std::to_string(iEventID) + " is not raised by this module");
  std::lock_guard l(s->mu);
  if (!*slot) return fail(GC_ERR_NOT_AVAILABLE, "this event is not registered");
  (*slot)->unregistered = true;
  s->event_cv.notify_all();
  forget(slot->get());
  slot->reset();
  return ok();
}

GC_ERROR EventGetData(EVENT_HANDLE hEvent, void* pBuffer, size_t* piSize, uint64_t iTimeout) {
  std::shared_ptr<Stream> s;
  std::shared_ptr<Event> ev;
  {
    SIM_LOCKED;
    if (!find_event(hEvent, &s, &ev)) return fail(GC_ERR_INVALID_HANDLE, "not an event");
  }
  if (!piSize) return fail(GC_ERR_INVALID_PARAMETER, "null size");
  std::unique_lock l(s->mu);
  if (!wait_for(l, *s, *ev, iTimeout)) return fail(GC_ERR_TIMEOUT, "no event within " + std::to_string(iTimeout) + " ms");
  if (ev->kills > 0) {
    --ev->kills;
    return fail(GC_ERR_ABORT, "EventKill");
  }
  if (has_data(*s, *ev)) return take(*s, *ev, pBuffer, piSize);
  if (ev->unregistered || s->closed) return fail(GC_ERR_ABORT, "the event was unregistered or its stream closed");
  return fail(GC_ERR_IO, "the device is gone (the link was lost)");
}

GC_ERROR EventGetDataInfo(EVENT_HANDLE hEvent, const void* pInBuffer, size_t iInSize, EVENT_DATA_INFO_CMD iInfoCmd, INFO_DATATYPE* piType,
                          void* pOutBuffer, size_t* piOutSize) {
  SIM_HANDLE(Event, e, hEvent);
  if (!pInBuffer) return fail(GC_ERR_INVALID_PARAMETER, "null event data");
  if (e->type == EVENT_NEW_BUFFER) {
    if (iInSize < sizeof(EVENT_NEW_BUFFER_DATA)) return fail(GC_ERR_INVALID_PARAMETER, "event data too short");
    EVENT_NEW_BUFFER_DATA d;
    std::memcpy(&d, pInBuffer, sizeof d);
    if (iInfoCmd == EVENT_DATA_ID) return put_ptr(d.BufferHandle, piType, pOutBuffer, piOutSize);
    if (iInfoCmd == EVENT_DATA_VALUE) return put_ptr(d.pUserPointer, piType, pOutBuffer, piOutSize);
  } else {
    if (iInSize < sizeof(GC_ERROR) + 1) return fail(GC_ERR_INVALID_PARAMETER, "event data too short");
    GC_ERROR code;
    std::memcpy(&code, pInBuffer, sizeof code);
    if (iInfoCmd == EVENT_DATA_ID) return put_i32(code, piType, pOutBuffer, piOutSize);
    if (iInfoCmd == EVENT_DATA_VALUE)
      return put_string(std::string(static_cast<const char*>(pInBuffer) + sizeof code, strnlen(static_cast<const char*>(pInBuffer) + sizeof code, iInSize - sizeof code)),
                        piType, pOutBuffer, piOutSize);
  }
  return fail(GC_ERR_NOT_IMPLEMENTED, "event data info " + std::to_string(iInfoCmd));
}

GC_ERROR EventGetInfo(EVENT_HANDLE hEvent, EVENT_INFO_CMD iInfoCmd, INFO_DATATYPE* piType, void* pBuffer, size_t* piSize) {
  SIM_HANDLE(Event, e, hEvent);
  Stream* s = e->stream;
  std::lock_guard l(s->mu);
  switch (iInfoCmd) {
    case EVENT_EVENT_TYPE: return put_i32(e->type, piType, pBuffer, piSize);
    case EVENT_NUM_IN_QUEUE: return put_size(e->type == EVENT_NEW_BUFFER ? s->output.size() : e->queue.size(), piType, pBuffer, piSize);
    case EVENT_NUM_FIRED: return put_u64(e->fired, piType, pBuffer, piSize);
    case EVENT_SIZE_MAX: return put_size(e->type == EVENT_NEW_BUFFER ? sizeof(EVENT_NEW_BUFFER_DATA) : 1024, piType, pBuffer, piSize);
    case EVENT_INFO_DATA_SIZE_MAX: return put_size(1024, piType, pBuffer, piSize);
    default: return fail(GC_ERR_NOT_IMPLEMENTED, "event info " + std::to_string(iInfoCmd));
  }
}

// EventFlush of the new-buffer event discards the output queue (as
// DSFlushQueue(ACQ_QUEUE_OUTPUT_DISCARD)); of the error event, its entries.
GC_ERROR EventFlush(EVENT_HANDLE hEvent) {
  SIM_HANDLE(Event, e, hEvent);
  Stream* s = e->stream;
  std::lock_guard l(s->mu);
  if (e->type == EVENT_NEW_BUFFER) {
    for (Buffer* b : s->output) b->state = Buffer::State::Announced;
    s->output.clear();
  } else {
    e->queue.clear();
  }
  return ok();
}

GC_ERROR EventKill(EVENT_HANDLE hEvent) {
  SIM_HANDLE(Event, e, hEvent);
  std::lock_guard l(e->stream->mu);
  ++e->kills;
  e->stream->event_cv.notify_all();
  return ok();
}

}  // extern "C"
