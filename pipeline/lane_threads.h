#pragma once
// The per-frame path's flow without oneTBB's scheduler: `lanes` dedicated
// threads take the batches in turn (batch k to thread k mod lanes). Each
// thread, on its turn, acquires the next batch (serial, in order: the turn
// passes on as soon as the batch is filled), processes it on its own
// processor (in parallel with the other threads), then, on its sink turn,
// hands it to the sinks (serial, in acquisition order). Waiting for a turn
// spins (then yields, so an oversubscribed host still progresses): no
// scheduler, queue, lock or allocation between a frame's arrival and its
// profile. Pipeline::run uses it for small batches on the CUDA backend
// (PipelineOptions::scheduling); docs/architecture.md says why (the
// pipeline's hand-overs cost tens of microseconds a frame and capped the
// batch of 1's rate, issue 24).
//
// Failure: the first exception stops every thread at its next turn; each
// thread gives back the slot it holds (`abandon`); run_in_turns rethrows it
// once every thread has ended.
#include <functional>

#include "core/thread_scheduling.h"

namespace stripeline {

struct Slot;

struct TurnSteps {
  std::function<Slot*()> acquire;                  // the next filled batch; null once the source has ended
  std::function<void(Slot*, int lane)> process;    // on lane `lane`'s own processor; gives the slot back itself if it throws
  std::function<void(Slot*)> sink;                 // in acquisition order
  std::function<void(Slot*)> abandon;              // a processed slot that will not reach the sinks (another lane failed)
};

// Runs the steps on `lanes` >= 1 threads until acquire() returns null (or
// throws) and every acquired batch is sunk; each thread scheduled as
// `scheduling` says (its CPUs, a real-time priority; checked beforehand by the caller).
void run_in_turns(int lanes, const TurnSteps& steps, const ThreadScheduling& scheduling = {});

}  // namespace stripeline
