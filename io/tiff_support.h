#pragma once
// Private to io/: libtiff glue shared by the TIFF reader and writer.
// libtiff reports problems through callbacks that print to stderr by default;
// here every handle gets its own handlers that collect the messages, so they
// can be put into the exception that names the file, and nothing is printed.
#include <tiffio.h>

#include <string>

#include "core/significant_bits.h"
#include "core/types.h"

namespace stripeline::io::detail {

// Messages libtiff produced for one handle (errors and warnings).
struct TiffMessages {
  std::string errors;
  std::string warnings;
  void clear() {
    errors.clear();
    warnings.clear();
  }
  // The errors, or a fallback when libtiff said nothing.
  std::string text(const char* fallback = "unknown libtiff error") const;
};

// Owns a TIFFOpenOptions whose error and warning handlers append to
// `messages` (which must outlive every handle opened with it). Also installs
// silent process-wide handlers once, for the rare message libtiff emits
// without a handle.
class TiffOpenOptions {
 public:
  explicit TiffOpenOptions(TiffMessages& messages, tmsize_t max_single_alloc = tmsize_t{256} << 20);
  ~TiffOpenOptions();
  TiffOpenOptions(const TiffOpenOptions&) = delete;
  TiffOpenOptions& operator=(const TiffOpenOptions&) = delete;
  TIFFOpenOptions* get() const { return options_; }

 private:
  TIFFOpenOptions* options_ = nullptr;
};

// The significant bits of the current directory's 16-bit samples: its
// MaxSampleValue, else its SMaxSampleValue (origin TiffTag), else the
// recording's description (origin Recording); not known when none says fewer
// than 16 bits, and for 8-bit samples.
SignificantBits tiff_significant_bits(TIFF* tif, PixelFormat format, const char* description);

// Replace libtiff's default stderr handlers by silent ones (idempotent).
void silence_libtiff();

}  // namespace stripeline::io::detail
