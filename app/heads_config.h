#pragma once
// Several heads in one daemon (docs/daemon.md "Several heads"): the
// [[head]] sections of a configuration and its [merge] section.
//
// A [[head]] holds a name, `device = N` (the CUDA ordinal its pipeline runs
// on, PipelineOptions::device; several heads may name one GPU) and any of the
// run's sections as its own sub-tables ([head.source], [head.synthetic],
// [head.camera], [head.camera.gentl], [head.processing], [head.output],
// [head.calibration], [head.publisher], [head.security]). A head's
// configuration is the file's top-level sections with its sub-tables laid
// over them key by key: what a head does not say, it inherits. [daemon] and
// [http] are the process's, shared by every head. The schema is the one of
// app/settings.cpp; a bad key of a head is named "head[<i>].<section>.<key>".
//
// [merge] runs the merge stage (streaming/merge.h) over the heads' own
// streams, subscribed on their publisher endpoints, and publishes the merged
// series (docs/scale-out.md "Merging inside the daemon"), and writes each
// merged series' range map and PLY. With CURVE: the heads -> merge hop with
// merge.client_key, the merged stream with the top-level [security].
// [merge.measure] (the keys of [measure]) applies a job to the merged rows.
#include <memory>
#include <string>
#include <vector>

#include "app/service_config.h"
#include "streaming/merge.h"

namespace stripeline {

struct Config;

// One [[head]]: its name and its whole configuration (top level + its own).
struct HeadEntry {
  std::string name;
  std::shared_ptr<const Config> config;
};

// [merge]
struct DaemonMergeConfig {
  bool enabled = false;
  std::string transforms;                      // head-to-world transforms (`stripeline align` writes them): one [[head]] per head name
  std::string grid;                            // X_MIN:X_MAX:DX, world mm
  std::string rule = "mean";                   // within one head's cell: max, min, mean or nearest
  int fill = 0;                                // gaps of up to this many cells filled after the merge
  std::string align = "encoder";               // encoder, timestamp or frame
  double tolerance_us = 50.0;                  // align = "timestamp": rows this close are one row
  std::string overlap = "mean";                // mean or quality
  int window_ms = 200;                         // a row waits at most this long for an absent head
  int max_pending_rows = 4096;                 // rows waiting at once; beyond, the oldest goes out early (set >= window x rows/s)
  std::string publish = "tcp://127.0.0.1:5570";  // the merged stream (bound)
  int send_hwm = 1000;                         // merged messages queued per subscriber
  int rows_per_message = 8;                    // merged rows per message at most
  double subscribe_timeout = 10.0;             // seconds a head waits for the merge's subscription before it publishes
  // Per merged series, in the top-level [output] dir as <run>-merge-<NNNNNN>-<name> (absolute names stay, prefixed the same way):
  std::string range_map;                       // float32 TIFF of world Z in mm (.tif/.tiff); "" = none
  std::string ply;                             // one vertex per merged cell with data (.ply; output.ply_encoding); "" = none
  // CURVE on the heads -> merge hop: this merge's secret key file, listed in every CURVE head's security.client_keys
  // (the heads' server public keys come from their own security.server_secret_key certificates). "" = no CURVE there.
  std::string client_key;
  int realtime_priority = 0;                   // SCHED_FIFO priority of the merge's thread and its I/O threads (0 = the default scheduling)
  std::string cpus;                            // the CPUs they may run on ("2-3"); "" = any
  // [merge.measure]: a job on the merged scan, the schema of [measure] (docs/measure.md "Measuring the merged scan").
  MeasureConfig measure;

  // Throws ConfigError naming the key (without "merge.").
  void validate() const;
  bool operator==(const DaemonMergeConfig&) const = default;
};

// What the heads of a configuration must agree on (names unique, publisher
// endpoints distinct, [merge] with every head publishing on a fixed
// endpoint). Throws ConfigError naming the key ("head[2].name: ...").
void check_heads(const std::vector<HeadEntry>& heads, const DaemonMergeConfig& merge);

// The merge stage's configuration for these heads: head i (bit i of a merged
// row's mask) is the i-th [[head]], subscribed on its publisher endpoint,
// mapped by its transform in merge.transforms. InputError naming the file or
// the key (loads the transforms file).
MergeServiceConfig merge_service_config(const DaemonMergeConfig& merge, const std::vector<HeadEntry>& heads);

}  // namespace stripeline
