#include "io/tiff_support.h"

#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <new>

#include "io/reader_common.h"

namespace stripeline::io::detail {
namespace {

void append_message(std::string& out, const char* module, const char* fmt, va_list ap) {
  char buffer[512];
  std::vsnprintf(buffer, sizeof buffer, fmt, ap);
  if (!out.empty()) out += "; ";
  // libtiff's module is usually the function or the file name: the file is
  // named by our own message already, so keep just the text.
  (void)module;
  out += buffer;
}

int on_error(TIFF*, void* user_data, const char* module, const char* fmt, va_list ap) {
  auto* messages = static_cast<TiffMessages*>(user_data);
  if (messages != nullptr && messages->errors.size() < 4096) append_message(messages->errors, module, fmt, ap);
  return 1;  // handled: do not call the process-wide handler
}

int on_warning(TIFF*, void* user_data, const char* module, const char* fmt, va_list ap) {
  auto* messages = static_cast<TiffMessages*>(user_data);
  if (messages != nullptr && messages->warnings.size() < 4096) append_message(messages->warnings, module, fmt, ap);
  return 1;
}

void silent_handler(const char*, const char*, va_list) {}

}  // namespace

std::string TiffMessages::text(const char* fallback) const { return errors.empty() ? std::string(fallback) : errors; }

void silence_libtiff() {
  static std::once_flag once;
  std::call_once(once, [] {
    TIFFSetErrorHandler(silent_handler);
    TIFFSetWarningHandler(silent_handler);
    TIFFSetErrorHandlerExt(nullptr);
    TIFFSetWarningHandlerExt(nullptr);
  });
}

TiffOpenOptions::TiffOpenOptions(TiffMessages& messages, tmsize_t max_single_alloc) {
  silence_libtiff();
  options_ = TIFFOpenOptionsAlloc();
  if (options_ == nullptr) throw std::bad_alloc();
  TIFFOpenOptionsSetMaxSingleMemAlloc(options_, max_single_alloc);
  TIFFOpenOptionsSetErrorHandlerExtR(options_, on_error, &messages);
  TIFFOpenOptionsSetWarningHandlerExtR(options_, on_warning, &messages);
}

TiffOpenOptions::~TiffOpenOptions() { TIFFOpenOptionsFree(options_); }

SignificantBits tiff_significant_bits(TIFF* tif, PixelFormat format, const char* description) {
  std::uint16_t max_value = 0;
  if (TIFFGetField(tif, TIFFTAG_MAXSAMPLEVALUE, &max_value) == 1)
    if (const SignificantBits b = significant_bits_of_max(format, max_value, BitsOrigin::TiffTag); b.known()) return b;
  double smax = 0.0;
  if (TIFFGetField(tif, TIFFTAG_SMAXSAMPLEVALUE, &smax) == 1)
    if (const SignificantBits b = significant_bits_of_max(format, smax, BitsOrigin::TiffTag); b.known()) return b;
  if (format == PixelFormat::Mono16 && description != nullptr) return recorded_significant_bits(description);
  return {};
}

}  // namespace stripeline::io::detail
